import { Approval, Catalog, defineTool, type Plugin } from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const manifest = { title: "Payments", summary: "Pays.", whenToUse: ["The user pays."] }
const pay = defineTool({
  name: "pay",
  description: "Pays an amount.",
  input: Schema.Struct({ amount: Schema.Number }),
  requiresApproval: true,
  handler: ({ amount }) => amount
})
const quote = defineTool({
  name: "quote",
  description: "Quotes.",
  input: Schema.Struct({}),
  handler: () => "1"
})

const boot = (plugins: ReadonlyArray<unknown>) => Catalog.make(plugins as ReadonlyArray<Plugin>)

describe("requiresApproval on a tool definition", () => {
  it("is kept on the catalog's tool when true, absent otherwise", () => {
    const catalog = boot([{ name: "payments", manifest, tools: [pay, quote] }])
    if (Either.isLeft(catalog)) throw new Error(catalog.left.message)
    expect(catalog.right.toolsByName.get("pay")?.requiresApproval).toBe(true)
    expect(catalog.right.toolsByName.get("quote")?.requiresApproval).toBeUndefined()
  })

  it("anything but a boolean is a boot error naming the plugin, the tool and the field", () => {
    const catalog = boot([{ name: "payments", manifest, tools: [{ ...pay, requiresApproval: "yes" }] }])
    expect(Either.isLeft(catalog) ? catalog.left.errors : []).toEqual([
      "Plugin 'payments' tool 'pay' field 'requiresApproval' must be true or false (got string)."
    ])
  })
})

describe("Approval.parseOperatorList and needsApproval", () => {
  const parse = (text: string) => {
    const parsed = Approval.parseOperatorList(text)
    if (Either.isLeft(parsed)) throw new Error(parsed.left)
    return parsed.right
  }

  it("a plugin entry covers all its tools, a plugin/tool entry one tool", () => {
    const list = parse(" payments , mail/send_email,")
    const tool = (plugin: string, name: string) => ({ plugin, name })
    expect(Approval.needsApproval(tool("payments", "quote"), list)).toBe(true)
    expect(Approval.needsApproval(tool("mail", "send_email"), list)).toBe(true)
    expect(Approval.needsApproval(tool("mail", "read_email"), list)).toBe(false)
    expect(Approval.needsApproval({ ...tool("other", "x"), requiresApproval: true }, Approval.NONE)).toBe(
      true
    )
    expect(Approval.needsApproval(tool("other", "x"), Approval.NONE)).toBe(false)
    expect(Approval.reasonOf(tool("mail", "send_email"))).toBe(
      "the operator requires approval for 'mail/send_email'"
    )
  })

  it("a bad entry is refused with the entry quoted", () => {
    for (const bad of ["Payments", "a/b/c", "mail/", "mail/send email", "/x"]) {
      const parsed = Approval.parseOperatorList(`ok,${bad}`)
      expect(Either.isLeft(parsed) ? parsed.left : "accepted").toContain(`'${bad}'`)
    }
  })

  it("every listed entry needs approval, and nothing else does (property)", () => {
    const name = fc.stringMatching(/^[a-z0-9]{1,8}$/)
    fc.assert(
      fc.property(fc.array(fc.tuple(name, name)), name, name, (entries, plugin, tool) => {
        const list = parse(entries.map(([p, t]) => `${p}/${t}`).join(","))
        const listed = entries.some(([p, t]) => p === plugin && t === tool)
        expect(Approval.needsApproval({ plugin, name: tool }, list)).toBe(listed)
      })
    )
  })
})

describe("destructiveHint (an MCP tool's annotation)", () => {
  const remove = { plugin: "files", name: "remove", destructiveHint: true }
  it("needs approval unless the operator turned the hint off; the reason names the hint", () => {
    expect(Approval.needsApproval(remove, Approval.NONE)).toBe(true)
    expect(Approval.reasonOf(remove)).toContain("destructive")
    const off = { ...Approval.NONE, destructive: false }
    expect(Approval.needsApproval(remove, off)).toBe(false)
    expect(Approval.needsApproval({ ...remove, destructiveHint: false }, Approval.NONE)).toBe(false)
    // Off, the operator's list still applies, and the reason is the operator's.
    const listed = { ...off, tools: new Set(["files/remove"]) }
    expect(Approval.needsApproval(remove, listed)).toBe(true)
    expect(Approval.reasonOf(remove, listed)).toBe("the operator requires approval for 'files/remove'")
  })

  it("is kept on the catalog's tool when true; anything but a boolean is a boot error", () => {
    const catalog = boot([{ name: "files", manifest, tools: [{ ...quote, destructiveHint: true }] }])
    if (Either.isLeft(catalog)) throw new Error(catalog.left.message)
    expect(catalog.right.toolsByName.get("quote")?.destructiveHint).toBe(true)
    const bad = boot([{ name: "files", manifest, tools: [{ ...quote, destructiveHint: "yes" }] }])
    expect(Either.isLeft(bad) && bad.left.message).toContain("field 'destructiveHint' must be true or false")
  })
})
