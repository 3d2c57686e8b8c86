/**
 * The agent runtime's own cost per turn: build the agent for the request (`createMainAgent`),
 * load the thread from the checkpointer, offer tools and compose the prompt on every model call,
 * dispatch the tool calls, save the state — with a zero-latency scripted model, so everything
 * measured is the runtime (plus LangGraph and LangChain underneath it, and the scripted model's
 * own bookkeeping, which makes the figures conservative).
 *
 * Two turns are timed, on catalogs of 50 and 5,000 plugins, with LangGraph's MemorySaver and with
 * plugboard's SQLite saver (a file in a temp directory):
 * - "first turn": a new thread; load_capability → the loaded plugin's tool → answer (3 model
 *   calls, 2 tool calls);
 * - "next turn": the same thread again (its state loaded from the checkpointer): the loaded
 *   tool → answer (2 model calls, 1 tool call).
 * Each sample is one whole request: agent build + turn, with `runTurn`'s default durability
 * (`exit`: one checkpoint write at the end of the turn). Median and p99 over the samples, after
 * a warm-up, and the mean CPU time per turn (process user + system time over all samples, which
 * a busy machine distorts far less than wall time). Target: < 5 ms median at 5,000 plugins.
 *
 * Then, at 5,000 plugins:
 * - plugboard against a bare LangGraph graph: a `StateGraph` over `MessagesAnnotation` with a
 *   model node and a tool node of a few lines each, the same zero-latency scripted model bound
 *   to the same tool definitions, the same script and steps (first turn: 3 model + 2 tool
 *   steps; next turn: 2 + 1), compiled per request against a MemorySaver like the agent.
 *   Samples alternate between the two, so both see the same machine load. The difference is
 *   what plugboard's agent costs against the bare graph per turn: its offer, events, state
 *   channels and per-request build add; its loop in one node (`AgentLoop.ts`) saves the
 *   supersteps the bare graph takes per model call and tool batch.
 * - `load_capability` fed a runaway list: 200 unknown names of 1,000 characters (refused whole:
 *   over the 32-name cap), and the worst accepted call, 32 unknown names of 128 characters
 *   (each gets "did you mean" suggestions).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Catalog, LoadedPlugins, MetaTools, Offer } from "@plugboard/core"
import { createMainAgent, MemorySaver, prepareCatalog, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { makeSqliteSaver } from "@plugboard/sqlite"
import { Either } from "effect"
// Lives with the adapter's tests (which check it takes the same steps as the agent), where
// LangGraph resolves; the workspace root does not depend on LangGraph directly.
import { bareGraph } from "../packages/adapters/langgraph/test/bareGraph.js"
import { syntheticPlugins } from "./syntheticCatalog.js"

const WARMUP = 100
const SAMPLES = 300

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const fmt = (ms: number) => `${ms.toFixed(2)} ms`

interface Saver {
  readonly name: string
  readonly make: () => { saver: MemorySaver | ReturnType<typeof makeSqliteSaver>; close: () => void }
}

const savers: ReadonlyArray<Saver> = [
  { name: "MemorySaver", make: () => ({ saver: new MemorySaver(), close: () => {} }) },
  {
    name: "SqliteSaver",
    make: () => {
      const dir = mkdtempSync(join(tmpdir(), "plugboard-agent-bench-"))
      const saver = makeSqliteSaver({ filename: join(dir, "user.sqlite") })
      return {
        saver,
        close: () => {
          saver.close()
          rmSync(dir, { recursive: true, force: true })
        }
      }
    }
  }
]

export default async () => {
  console.log(`per request = createMainAgent + one turn; ${SAMPLES} samples after ${WARMUP} warm-up`)
  // Shared machines skew timings: print the load so a reader can judge the figures.
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`
  )
  console.log("plugins  saver         turn         median    p99       CPU mean  build-only median")
  // The target: the runtime's own cost per turn under 5 ms median at 5,000 plugins.
  const atTarget: Array<{ label: string; median: number }> = []
  for (const size of [50, 5_000]) {
    const catalog = Catalog.unsafeMake(syntheticPlugins(size))
    prepareCatalog(catalog)
    const target = `plugin-${Math.floor(size / 2) + 1}`
    const tool = `lookup_${Math.floor(size / 2) + 1}_0`
    for (const { name, make } of savers) {
      const { saver, close } = make()
      const request = (sessionId: string, steps: Parameters<typeof ScriptedChatModel.script>[0]) => ({
        catalog,
        model: ScriptedChatModel.script(steps),
        checkpointer: saver,
        basePrompt: "You are a helpful assistant.",
        request: { did: "did:key:bench", sessionId, requestId: sessionId }
      })
      const first: Array<number> = []
      const next: Array<number> = []
      const build: Array<number> = []
      // CPU time (user + system, µs) spent in each kind of turn: on a loaded shared machine wall
      // time mostly measures waiting for a core, CPU time measures the work.
      const cpu = { first: 0, next: 0 }
      for (let i = 0; i < WARMUP + SAMPLES; i++) {
        const sessionId = `${name}-${size}-${i}`
        const a = request(sessionId, [
          { tool: "load_capability", args: { names: [target] } },
          { tool, args: { query: "latest" } },
          "Here are the latest records."
        ])
        const b = request(sessionId, [{ tool, args: { query: "older" } }, "Here are older ones."])
        let c0 = process.cpuUsage()
        let t0 = performance.now()
        const agentA = await createMainAgent(a)
        const built = performance.now() - t0
        const r1 = await runTurn(agentA, { message: "Show me the latest records." })
        const t1 = performance.now() - t0
        const c1 = process.cpuUsage(c0)
        c0 = process.cpuUsage()
        t0 = performance.now()
        const r2 = await runTurn(await createMainAgent(b), { message: "And older ones?" })
        const t2 = performance.now() - t0
        const c2 = process.cpuUsage(c0)
        if (r1.state.loadedPlugins[0] !== target || r2.state.loadedPlugins[0] !== target) {
          throw new Error(`bench turn did not load ${target}: ${JSON.stringify(r2.state.loadedPlugins)}`)
        }
        if (i >= WARMUP) {
          first.push(t1)
          next.push(t2)
          build.push(built)
          cpu.first += c1.user + c1.system
          cpu.next += c2.user + c2.system
        }
      }
      close()
      for (const [label, xs, cpuMicros] of [
        ["first turn", first, cpu.first],
        ["next turn ", next, cpu.next]
      ] as const) {
        const s = [...xs].sort((x, y) => x - y)
        const bs = [...build].sort((x, y) => x - y)
        if (size === 5_000) atTarget.push({ label: `${name} ${label.trim()}`, median: percentile(s, 50) })
        console.log(
          `${String(size).padStart(7)}  ${name.padEnd(12)}  ${label}   ${fmt(percentile(s, 50)).padEnd(9)} ${fmt(percentile(s, 99)).padEnd(9)} ${fmt(cpuMicros / 1000 / SAMPLES).padEnd(9)} ${label === "first turn" ? fmt(percentile(bs, 50)) : ""}`
        )
      }
    }
  }
  const worst = atTarget.reduce((a, b) => (b.median > a.median ? b : a))
  console.log(
    `target (< 5 ms median at 5,000 plugins): ${worst.median < 5 ? "met" : "MISSED"} — slowest ${worst.label} ${fmt(worst.median)}`
  )
  const catalog = Catalog.unsafeMake(syntheticPlugins(5_000))
  prepareCatalog(catalog)
  await againstBareLangGraph(catalog)
  loadCapabilityRunaway(catalog)
}

type Steps = Parameters<typeof ScriptedChatModel.script>[0]

/** The OpenAI function definitions of what plugboard offers a thread that loaded `loaded`. */
const definitionsFor = (catalog: Catalog.Catalog, loaded: ReadonlyArray<string>) =>
  Offer.offer(catalog, LoadedPlugins.union([], loaded)).map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description, parameters: t.parameters }
  }))

const againstBareLangGraph = async (catalog: Catalog.Catalog) => {
  const size = 5_000
  const target = `plugin-${size / 2 + 1}`
  const tool = `lookup_${size / 2 + 1}_0`
  const first: Steps = [
    { tool: "load_capability", args: { names: [target] } },
    { tool, args: { query: "latest" } },
    "Here are the latest records."
  ]
  const next: Steps = [{ tool, args: { query: "older" } }, "Here are older ones."]
  const definitions = { before: definitionsFor(catalog, []), after: definitionsFor(catalog, [target]) }
  const times = {
    plugboard: { first: [] as number[], next: [] as number[] },
    bare: { first: [] as number[], next: [] as number[] }
  }
  const saverP = new MemorySaver()
  const saverB = new MemorySaver()
  for (let i = 0; i < WARMUP + SAMPLES; i++) {
    const sessionId = `cmp-${i}`
    const keep = i >= WARMUP
    // plugboard: one request per turn, as in the table above.
    for (const [turn, steps, message] of [
      ["first", first, "Show me the latest records."],
      ["next", next, "And older ones?"]
    ] as const) {
      const t0 = performance.now()
      const agent = await createMainAgent({
        catalog,
        model: ScriptedChatModel.script(steps),
        checkpointer: saverP,
        basePrompt: "You are a helpful assistant.",
        request: { did: "did:key:bench", sessionId, requestId: sessionId }
      })
      const r = await runTurn(agent, { message })
      if (keep) times.plugboard[turn].push(performance.now() - t0)
      if (r.state.loadedPlugins[0] !== target) throw new Error("plugboard comparison turn did not load")
    }
    // The bare graph: the same script, steps and model, compiled per request.
    for (const [turn, steps, message] of [
      ["first", first, "Show me the latest records."],
      ["next", next, "And older ones?"]
    ] as const) {
      const t0 = performance.now()
      const graph = bareGraph(ScriptedChatModel.script(steps), definitions, saverB)
      const out = await graph.invoke(
        { messages: [{ role: "user", content: message }] },
        { configurable: { thread_id: sessionId }, durability: "exit" }
      )
      if (keep) times.bare[turn].push(performance.now() - t0)
      const expected = turn === "first" ? 6 : 10
      if (out.messages.length !== expected) throw new Error(`bare graph: ${out.messages.length} messages`)
    }
  }
  const median = (xs: ReadonlyArray<number>) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50
    )
  console.log(
    `\nper turn at ${size.toLocaleString("en")} plugins, MemorySaver, ${SAMPLES} samples each, alternating:`
  )
  console.log("turn                      plugboard agent  bare LangGraph graph  difference")
  for (const turn of ["first", "next"] as const) {
    const p = median(times.plugboard[turn])
    const b = median(times.bare[turn])
    const label = turn === "first" ? "first (3 model + 2 tool)" : "next (2 model + 1 tool) "
    console.log(`${label}  ${fmt(p).padEnd(15)}  ${fmt(b).padEnd(20)}  ${fmt(p - b)}`)
  }
}

const loadCapabilityRunaway = (catalog: Catalog.Catalog) => {
  const name = (i: number, length: number) =>
    `${String(i).padStart(4, "0")}-${"unknownplugin".repeat(100)}`.slice(0, length)
  const cases = [
    {
      label: "200 unknown names of 1,000 chars",
      names: Array.from({ length: 200 }, (_, i) => name(i, 1000))
    },
    { label: " 32 unknown names of   128 chars", names: Array.from({ length: 32 }, (_, i) => name(i, 128)) },
    {
      label: " 32 near-miss names (typos)     ",
      names: Array.from({ length: 32 }, (_, i) => `plugin-${i * 150 + 7}x`)
    }
  ]
  console.log(`\nload_capability at ${catalog.entries.length.toLocaleString("en")} plugins (median of 30):`)
  for (const { label, names } of cases) {
    const xs: Array<number> = []
    let answer = ""
    for (let i = 0; i < 33; i++) {
      const t0 = performance.now()
      const result = MetaTools.loadCapability(catalog, [], { names })
      const ms = performance.now() - t0
      if (i >= 3) xs.push(ms)
      answer = MetaTools.formatToolMessage(Either.merge(result))
    }
    const sorted = xs.sort((a, b) => a - b)
    console.log(
      `  ${label}  ${fmt(percentile(sorted, 50))}  (ToolMessage ${answer.length.toLocaleString("en")} chars)`
    )
  }
}
