/** APPROVAL_TOOLS, APPROVAL_MCP_DESTRUCTIVE and WAIT_TIMEOUT_MS: read, defaulted, and a bad value named (issue 40). */
import { Approval } from "@plugboard/core"
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { fromEnv } from "../src/Config.js"

const check = (env: Record<string, string>) =>
  Either.mapLeft(Effect.runSync(Effect.either(fromEnv(env, "/srv"))), (e) => e.lines)

describe("approval variables", () => {
  it("default to no operator list and ten minutes", () => {
    const config = Either.getOrThrow(check({}))
    expect(config.approvalTools).toEqual({ ...Approval.NONE, destructive: true })
    expect(config.waitTimeoutMs).toBe(600_000)
  })

  it("APPROVAL_MCP_DESTRUCTIVE: on by default, off ignores MCP's destructiveHint, anything else is refused", () => {
    expect(Either.getOrThrow(check({ APPROVAL_MCP_DESTRUCTIVE: "off" })).approvalTools.destructive).toBe(
      false
    )
    expect(
      Either.getOrThrow(check({ APPROVAL_MCP_DESTRUCTIVE: "off", APPROVAL_TOOLS: "payments" })).approvalTools
    ).toMatchObject({ destructive: false, plugins: new Set(["payments"]) })
    const bad = check({ APPROVAL_MCP_DESTRUCTIVE: "sometimes", APPROVAL_TOOLS: "Bad Name" })
    // Both are named at once.
    const lines = Either.isLeft(bad) ? bad.left.join("\n") : ""
    expect(lines).toContain('APPROVAL_MCP_DESTRUCTIVE must be true or false, got "sometimes"')
    expect(lines).toContain("APPROVAL_TOOLS: 'Bad Name'")
  })

  it("are read: plugins and plugin/tool entries, the timeout in milliseconds", () => {
    const config = Either.getOrThrow(
      check({ APPROVAL_TOOLS: "payments, mail/send_email", WAIT_TIMEOUT_MS: "5000" })
    )
    expect([...config.approvalTools.plugins]).toEqual(["payments"])
    expect([...config.approvalTools.tools]).toEqual(["mail/send_email"])
    expect(config.waitTimeoutMs).toBe(5000)
  })

  it("a bad entry and a bad timeout are config errors naming the variable, together", () => {
    const lines = Either.match(check({ APPROVAL_TOOLS: "mail/send email", WAIT_TIMEOUT_MS: "soon" }), {
      onLeft: (l) => l,
      onRight: () => []
    })
    expect(lines.join("\n")).toContain("APPROVAL_TOOLS: 'mail/send email' is not a plugin name")
    expect(lines.join("\n")).toContain("WAIT_TIMEOUT_MS must be a whole number")
  })
})
