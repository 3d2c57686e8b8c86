/**
 * Shared state at boot: every plugin's `getSharedState` is read once, in catalog order, and
 * merged by core's rule — a key two plugins claim, a key the server holds itself, or a read that
 * fails, stops boot with a `[boot-error]` line naming the plugins, instead of a silent overwrite.
 */
import { definePlugin, type Plugin } from "@plugboard/core"
import { describe, expect, it } from "vitest"
import { CREDITS_LEDGER_KEY } from "../src/index.js"
import { bootLines } from "./helpers.js"

const sharing = (name: string, getSharedState: () => Record<string, unknown>) =>
  definePlugin({
    name,
    manifest: { title: name, summary: `Shared state of ${name}.`, visibility: "silent" },
    getSharedState
  })

const boot = (plugins: ReadonlyArray<Plugin>) => bootLines(plugins)

describe("shared state at boot", () => {
  it("boots when every key has one owner", async () => {
    expect(await boot([sharing("alpha", () => ({ a: 1 })), sharing("beta", () => ({ b: 2 }))])).toEqual([])
  })

  it("refuses a key two plugins claim, naming both, and reports every failed read", async () => {
    const lines = await boot([
      sharing("alpha", () => ({ profile: 1 })),
      sharing("beta", () => ({ profile: 2 })),
      sharing("gamma", () => {
        throw new Error("vault unreachable")
      })
    ])
    expect(lines).toContain(
      "[boot-error] Plugin 'beta' shared state key 'profile' is already registered by plugin 'alpha' (shared state is one namespace)."
    )
    expect(lines.some((l) => l.includes("'gamma'") && l.includes("vault unreachable"))).toBe(true)
  })

  it("refuses a plugin that registers the key under which the server exposes its credit ledger", async () => {
    expect(await boot([sharing("squatter", () => ({ [CREDITS_LEDGER_KEY]: "not a ledger" }))])).toEqual([
      `[boot-error] Plugin 'squatter' shared state key '${CREDITS_LEDGER_KEY}' is reserved by the host.`
    ])
  })
})
