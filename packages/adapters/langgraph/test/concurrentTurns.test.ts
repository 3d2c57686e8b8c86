/**
 * Two turns of one thread started together, at the adapter level (no host serialising them):
 * both must end up in the thread. Each turn loads the latest checkpoint when it starts and saves
 * a child of it when it ends, so without queueing the turn saved last would drop the other's
 * messages. Turns of different threads still run side by side.
 */
import { Catalog, definePlugin, defineTool } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { runTurn, streamTurn } from "../src/index.js"
import { makeCounters, weatherPlugin } from "./fixtures.js"
import { agentFor, savers } from "./harness.js"

const deferred = () => {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/** An always plugin whose tool waits for `gate` before it answers. */
const gated = (gate: Promise<void>, started: () => void) =>
  definePlugin({
    name: "gated",
    manifest: { title: "Gated", summary: "Waits.", whenToUse: ["waiting"], visibility: "always" },
    tools: [
      defineTool({
        name: "wait_for_gate",
        description: "Waits for the gate.",
        input: Schema.Struct({}),
        handler: async () => {
          started()
          await gate
          return "gate open"
        }
      })
    ]
  })

const contents = (messages: ReadonlyArray<{ content: unknown; getType: () => string }>) =>
  messages.map((m) => `${m.getType()}:${typeof m.content === "string" ? m.content : "…"}`)

describe.each(savers)("concurrent turns of one thread (%s)", (_name, make) => {
  it("keeps both turns: the second waits for the first and starts from what it saved", async () => {
    const fixture = make()
    try {
      const gate = deferred()
      const aStarted = deferred()
      const plugins = [weatherPlugin(makeCounters()), gated(gate.promise, aStarted.resolve)]
      const modelA = ScriptedChatModel.script([
        [{ tool: "load_capability", args: { names: ["weather"] } }],
        [{ tool: "wait_for_gate" }],
        "A done"
      ])
      const modelB = ScriptedChatModel.script(["B done"])
      const a = await agentFor({ plugins, model: modelA, saver: fixture.saver, sessionId: "s" })
      const b = await agentFor({ plugins, model: modelB, saver: fixture.saver, sessionId: "s" })
      const turnA = runTurn(a, { message: "turn A" })
      await aStarted.promise
      const turnB = runTurn(b, { message: "turn B" })
      // B is queued behind A: its model has not been called while A's tool runs.
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r))
      expect(modelB.calls).toHaveLength(0)
      gate.resolve()
      const [ra, rb] = await Promise.all([turnA, turnB])
      expect(ra.answer).toBe("A done")
      expect(rb.answer).toBe("B done")
      // B's model saw A's whole turn.
      expect(contents(modelB.calls[0]!.messages).slice(1)).toEqual(
        contents(ra.state.messages).concat("human:turn B")
      )
      const thread = (await b.getState()).messages
      expect(contents(thread).filter((m) => m.startsWith("human:") || m.endsWith(" done"))).toEqual([
        "human:turn A",
        "ai:A done",
        "human:turn B",
        "ai:B done"
      ])
      expect((await b.getState()).loadedPlugins).toEqual(["weather"])
    } finally {
      fixture.close()
    }
  })

  it("keeps both turns started at the same instant, streamed or not", async () => {
    const fixture = make()
    try {
      const plugins = [weatherPlugin(makeCounters())]
      const agents = await Promise.all(
        ["one", "two", "three"].map((n) =>
          agentFor({
            plugins,
            model: ScriptedChatModel.script([`${n} done`]),
            saver: fixture.saver,
            sessionId: "s2"
          })
        )
      )
      const drain = async (agent: (typeof agents)[number], message: string) => {
        const it = streamTurn(agent, { message })
        let next = await it.next()
        while (next.done !== true) next = await it.next()
        return next.value
      }
      await Promise.all([
        runTurn(agents[0]!, { message: "q one" }),
        drain(agents[1]!, "q two"),
        runTurn(agents[2]!, { message: "q three" })
      ])
      const thread = contents((await agents[0]!.getState()).messages)
      expect(thread).toHaveLength(6)
      for (const n of ["one", "two", "three"]) {
        expect(thread).toContain(`human:q ${n}`)
        expect(thread[thread.indexOf(`human:q ${n}`) + 1]).toBe(`ai:${n} done`)
      }
    } finally {
      fixture.close()
    }
  })

  it("does not hold up a turn of another thread", async () => {
    const fixture = make()
    try {
      const gate = deferred()
      const started = deferred()
      const plugins = [gated(gate.promise, started.resolve)]
      const held = await agentFor({
        plugins,
        model: ScriptedChatModel.script([[{ tool: "wait_for_gate" }], "held done"]),
        saver: fixture.saver,
        sessionId: "thread-x"
      })
      const other = await agentFor({
        plugins,
        model: ScriptedChatModel.script(["other done"]),
        saver: fixture.saver,
        sessionId: "thread-y"
      })
      const heldTurn = runTurn(held, { message: "wait" })
      await started.promise
      // Thread y finishes while thread x is still inside its turn.
      expect((await runTurn(other, { message: "go" })).answer).toBe("other done")
      gate.resolve()
      expect((await heldTurn).answer).toBe("held done")
    } finally {
      fixture.close()
    }
  })
})

/** An always plugin whose tool answers with its caller's did, holding `hold`'s caller at `gate`. */
const whoami = (hold: string, gate: Promise<void>, held: () => void) =>
  definePlugin({
    name: "whoami",
    manifest: {
      title: "Who am I",
      summary: "Says who calls.",
      whenToUse: ["identity"],
      visibility: "always"
    },
    tools: [
      defineTool({
        name: "who",
        description: "Says who calls.",
        input: Schema.Struct({}),
        handler: async (_input, ctx) => {
          if (ctx.user.did === hold) {
            held()
            await gate
          }
          return `I am ${ctx.user.did}`
        }
      })
    ]
  })

describe.each(savers)(
  "turns of two users at once on the one compiled graph (%s, issue 37)",
  (_name, make) => {
    it("each turn runs its own loop on its own saver: nothing of one request reaches the other", async () => {
      const alice = make()
      const bob = make()
      try {
        const gate = deferred()
        const held = deferred()
        const catalog = Catalog.unsafeMake([whoami("did:key:alice", gate.promise, held.resolve)])
        const a = await agentFor({
          plugins: [],
          catalog,
          model: ScriptedChatModel.script([[{ tool: "who" }], "A done"]),
          saver: alice.saver,
          sessionId: "s",
          did: "did:key:alice"
        })
        const b = await agentFor({
          plugins: [],
          catalog,
          model: ScriptedChatModel.script([[{ tool: "who" }], "B done"]),
          saver: bob.saver,
          sessionId: "s",
          did: "did:key:bob"
        })
        // One compiled graph: the two requests' graphs share its node, each with its own config.
        expect(a.graph).not.toBe(b.graph)
        expect(a.graph.nodes.agent).toBe(b.graph.nodes.agent)
        const turnA = runTurn(a, { message: "from alice" })
        // Alice's turn is inside its tool call when Bob's turn runs from start to end.
        await held.promise
        const events: Array<string> = []
        const streamB = streamTurn(b, { message: "from bob" })
        let next = await streamB.next()
        while (next.done !== true) {
          events.push(next.value._tag)
          next = await streamB.next()
        }
        const resultB = next.value
        gate.resolve()
        const resultA = await turnA
        expect(resultA.answer).toBe("A done")
        expect(resultB.answer).toBe("B done")
        expect(contents(resultA.state.messages)).toEqual([
          "human:from alice",
          "ai:",
          "tool:I am did:key:alice",
          "ai:A done"
        ])
        expect(contents(resultB.state.messages)).toEqual([
          "human:from bob",
          "ai:",
          "tool:I am did:key:bob",
          "ai:B done"
        ])
        expect(resultA.state.config.did).toBe("did:key:alice")
        expect(resultB.state.config.did).toBe("did:key:bob")
        // Each thread was saved on its own user's saver, and only there.
        expect(contents((await a.getState()).messages)).toEqual(contents(resultA.state.messages))
        expect(contents((await b.getState()).messages)).toEqual(contents(resultB.state.messages))
        expect(resultA.events.map((e) => e._tag)).toContain("tool_call")
        expect(events).toContain("message")
      } finally {
        alice.close()
        bob.close()
      }
    })
  }
)
