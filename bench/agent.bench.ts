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
 */
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { createMainAgent, MemorySaver, prepareCatalog, runTurn } from "@plugboard/adapters/langgraph"
import { ScriptedChatModel } from "@plugboard/adapters/models"
import { makeSqliteSaver } from "@plugboard/adapters/sqlite"
import { Catalog, type Plugin } from "@plugboard/core"
import { Schema } from "effect"

const WARMUP = 100
const SAMPLES = 300

const Query = Schema.Struct({ query: Schema.String.annotations({ description: "What to look up." }) })

/** `n` plugins: 5 always, one in 50 silent, the rest on-demand; 2 tools each. */
const makePlugins = (n: number): ReadonlyArray<Plugin> =>
  Array.from({ length: n }, (_, i): Plugin => {
    const visibility = i < 5 ? "always" : i % 50 === 49 ? "silent" : "on-demand"
    return {
      name: `plugin-${i}`,
      manifest: {
        title: `Plugin ${i}`,
        summary: `Records of kind ${i}: look up and summarise them.`,
        whenToUse: [`When the user asks about records of kind ${i}.`],
        tags: [`kind-${i}`],
        category: "data",
        visibility
      },
      tools: [0, 1].map((j) => ({
        name: `lookup_${i}_${j}`,
        description: `Look up records of kind ${i} (variant ${j}); returns JSON.`,
        input: Query,
        handler: (input: { query: string }) => ({ kind: i, variant: j, query: input.query, rows: 3 })
      }))
    }
  })

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
    const catalog = Catalog.unsafeMake(makePlugins(size))
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
}
