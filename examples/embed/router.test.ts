/**
 * The offline demo across the whole examples' catalog: every manifest example's user message,
 * asked in a fresh thread of an embedded agent driven by the scripted router, makes the agent
 * load that example's plugin (unless its tool is always offered) and call the tool the example
 * names.
 */

import { Catalog } from "@plugboard/core"
import { createMainAgent, MemorySaver, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { makeExamplePlugins } from "../catalog/index.js"

interface Asked {
  readonly plugin: string
  readonly query: string
  readonly expected: string
  /** Plugin tools called, in order (meta-tools left out). */
  readonly called: ReadonlyArray<string>
  readonly loaded: ReadonlyArray<string>
  /** Contents of the turn's failed tool calls. */
  readonly failures: ReadonlyArray<string>
}

/** Asks every manifest example of the catalog, each in its own thread. */
const askEveryExample = async (): Promise<ReadonlyArray<Asked>> => {
  const catalog = Catalog.unsafeMake(makeExamplePlugins({ now: () => new Date("2025-06-02T10:30:00Z") }))
  const model = ScriptedChatModel.router({ catalog })
  const checkpointer = new MemorySaver()
  const out: Array<Asked> = []
  for (const entry of catalog.entries) {
    if (!entry.discoverable) continue
    for (const [i, example] of (entry.manifest.examples ?? []).entries()) {
      const agent = await createMainAgent({
        catalog,
        model,
        checkpointer,
        request: { did: "did:key:z6MkRouter", sessionId: `${entry.name}-${i}` }
      })
      const turn = await runTurn(agent, { message: example.user })
      out.push({
        plugin: entry.name,
        query: example.user,
        expected: example.tool,
        called: turn.events.flatMap((e) =>
          e._tag === "tool_call" && e.status === "done" && e.toolName !== "load_capability"
            ? [e.toolName]
            : []
        ),
        loaded: turn.state.loadedPlugins,
        failures: turn.state.messages
          .filter((m) => m.getType() === "tool" && (m as { status?: string }).status === "error")
          .map((m) => String(m.content).split("\n")[0]!)
      })
    }
  }
  return out
}

describe("the examples' catalog behind the offline router", () => {
  const asked = askEveryExample()

  it("loads the right plugin and calls the example's tool for every manifest example", async () => {
    const all = await asked
    expect(all.length).toBeGreaterThanOrEqual(100)
    const wrong = all.filter((a) => {
      const tool = a.called[0]
      const alwaysOffered = a.plugin === "notes" || a.plugin === "clock" || tool === "get_preferences"
      return tool !== a.expected || !(alwaysOffered || a.loaded.includes(a.plugin))
    })
    expect(wrong.map((a) => `${a.plugin}: "${a.query}" -> ${a.called.join(", ")}`)).toEqual([])
  })

  it("passes arguments that every tool accepts", async () => {
    const failed = (await asked).filter((a) => a.failures.length > 0)
    expect(failed.map((a) => `${a.plugin}: "${a.query}" -> ${a.failures.join(" | ")}`)).toEqual([])
  })
})
