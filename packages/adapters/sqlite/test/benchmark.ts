/**
 * The body of `pnpm bench sqlite` (bench/sqlite.bench.ts). It lives in the adapters package so
 * that it resolves the adapters' own dependencies (LangChain, the reference saver). Put, getTuple and list throughput of `@plugboard/sqlite`'s
 * saver against `@langchain/langgraph-checkpoint-sqlite`'s `SqliteSaver`, on the same data, in
 * the same run, on files in the same temp directory, with the same `synchronous` setting.
 *
 * The data is shaped like the agent's threads (see `makeThread`): a `messages` channel that grows
 * by one LangChain message per step, the per-request channels (docs/spec/graph-state.md#channels)
 * written once per turn, and one pending write per step. `newVersions` names only the channels that
 * changed, as LangGraph passes it. Throughput is measured in CPU time (see `time`).
 *
 * Then the same threads in the shape the agent now stores them on this saver (messages as
 * deltas, docs/benchmarks.md): each step's checkpoint without `messages` in its values (its
 * version still moves), and the step's new message as a pending write; a load is `getTuple` plus
 * `getDeltaChannelHistory` (what LangGraph does to rebuild the channel). Both savers get exactly
 * these calls; LangChain's saver answers the history with the base class's walk (a `getTuple`
 * per ancestor). The 20 threads are read in turn and the saver caches the histories of 8, so
 * every read here misses the cache: the figure is the uncached cost.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import type {
  BaseCheckpointSaver,
  ChannelVersions,
  Checkpoint,
  CheckpointMetadata
} from "@langchain/langgraph-checkpoint"
import { uuid6 } from "@langchain/langgraph-checkpoint"
import { SqliteSaver as ReferenceSaver } from "@langchain/langgraph-checkpoint-sqlite"
import Database from "better-sqlite3"
import { makeSqliteSaver } from "../src/index.js"

const THREADS = 20
const STEPS = 30
const ROUNDS = 5

interface Step {
  readonly checkpoint: Checkpoint
  readonly metadata: CheckpointMetadata
  readonly newVersions: ChannelVersions
}

const lorem =
  "The forecast for Lisbon shows light rain in the morning, clearing by noon, with highs near 19°C. "

/**
 * A client-side tool definition as the portal sends it each request (`browserTools`,
 * docs/spec/wire.md#client-side-tools).
 */
const browserTool = (name: string) => ({
  name,
  description: `Lets the agent ${name.replace(/_/g, " ")} in the user's open editor. ${lorem.slice(0, 60)}`,
  schema: {
    type: "object",
    properties: {
      target: { type: "string", description: "CSS selector or block id of the element to act on" },
      value: { type: "string", description: "Text or value to apply" },
      options: { type: "object", properties: { scroll: { type: "boolean" }, focus: { type: "boolean" } } }
    },
    required: ["target"]
  }
})

/**
 * One thread's steps; ids are generated up front so both savers store identical data. The state is
 * the agent's (docs/spec/graph-state.md): each turn is three steps — the input (a human message
 * plus the per-request channels the client sends: config, client, browserTools, userContext,
 * mcpUcanContext), the agent (an AI message, with a tool call every other turn) and the tool result
 * — and every step writes LangGraph's `branch:to:<node>` trigger channel.
 */
export const makeThread = (t: number): Array<Step> => {
  const steps: Array<Step> = []
  const messages: Array<BaseMessage> = []
  const versions: Record<string, number> = {}
  const values: Record<string, unknown> = {}
  for (let s = 0; s < STEPS; s++) {
    const turn = Math.floor(s / 3)
    const kind = s % 3 === 0 ? "input" : s % 3 === 1 ? "agent" : "tools"
    const changed: Array<string> = [
      "messages",
      `branch:to:${kind === "input" ? "agent" : kind === "agent" ? "tools" : "agent"}`
    ]
    if (kind === "input") {
      messages.push(
        new HumanMessage({
          content: `Question ${turn} of thread ${t}: ${lorem.slice(0, 80)}`,
          id: `h-${t}-${s}`
        })
      )
      values.config = { did: `did:key:z6Mk${t}`, wsId: `ws-${t}` }
      values.client = "portal"
      values.browserTools = ["highlight_block", "insert_text", "open_panel"].map(browserTool)
      values.userContext = {
        name: `user ${t}`,
        timezone: "Europe/Lisbon",
        interests: ["weather", "travel"],
        recent: lorem
      }
      values.mcpUcanContext = { invocations: { weather: `ucan-${t}-${turn}-${"x".repeat(300)}` } }
      changed.push("config", "client", "browserTools", "userContext", "mcpUcanContext")
    } else if (kind === "agent") {
      messages.push(
        new AIMessage({
          content: lorem.repeat(3),
          id: `a-${t}-${s}`,
          tool_calls:
            turn % 2 === 0 ? [{ id: `call-${t}-${s}`, name: "get_forecast", args: { city: "Lisbon" } }] : []
        })
      )
    } else {
      messages.push(
        new ToolMessage({ content: lorem.repeat(2), tool_call_id: `call-${t}-${s - 1}`, id: `t-${t}-${s}` })
      )
    }
    if (s === 7) {
      values.loadedPlugins = ["weather"]
      changed.push("loadedPlugins")
    }
    values.messages = [...messages]
    values[changed[1]!] = null
    const newVersions: ChannelVersions = {}
    for (const c of changed) {
      versions[c] = (versions[c] ?? 0) + 1
      newVersions[c] = versions[c]!
    }
    steps.push({
      checkpoint: {
        v: 4,
        id: uuid6(s),
        ts: new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString(),
        channel_values: { ...values },
        channel_versions: { ...versions },
        versions_seen: { agent: { messages: versions.messages! - 1 }, tools: { "branch:to:tools": 1 } }
      },
      metadata: { source: "loop", step: s, parents: {} },
      newVersions
    })
  }
  return steps
}

const data = Array.from({ length: THREADS }, (_, t) => makeThread(t))

/**
 * CPU time (user + system) of this process, and wall time. The work is single-threaded and
 * synchronous, and CPU time does not count the time the process waited for a core, so the CPU
 * figures hold on a loaded machine (wall time also measures the neighbours, and the disk).
 */
export const time = async (
  fn: () => Promise<number>
): Promise<{ ops: number; ms: number; wallMs: number }> => {
  const start = process.cpuUsage()
  const t0 = performance.now()
  const ops = await fn()
  const wallMs = performance.now() - t0
  const used = process.cpuUsage(start)
  return { ops, ms: (used.user + used.system) / 1000, wallMs }
}

/** Writes every thread of `threads` step by step (a put and a putWrites each); the operations made. */
export const putThreads = async (
  saver: BaseCheckpointSaver,
  prefix: string,
  threads: ReadonlyArray<ReadonlyArray<Step>>
) => {
  let n = 0
  for (const [t, steps] of threads.entries()) {
    let config: RunnableConfig = { configurable: { thread_id: `${prefix}-${t}`, checkpoint_ns: "" } }
    for (const step of steps) {
      config = await saver.put(config, step.checkpoint, step.metadata, step.newVersions)
      await saver.putWrites(config, [["messages", `write ${n}`]], "agent")
      n++
    }
  }
  return n
}

/** Reads each of `threads` threads' latest checkpoint `passes` times over, checking its messages. */
export const getLatestOf = async (
  saver: BaseCheckpointSaver,
  prefix: string,
  threads: number,
  passes: number
) => {
  let n = 0
  for (let pass = 0; pass < passes; pass++) {
    for (let t = 0; t < threads; t++) {
      const tuple = await saver.getTuple({ configurable: { thread_id: `${prefix}-${t}`, checkpoint_ns: "" } })
      if ((tuple?.checkpoint.channel_values.messages as Array<unknown> | undefined)?.length !== STEPS)
        throw new Error("bad read")
      n++
    }
  }
  return n
}

const putAll = (saver: BaseCheckpointSaver, prefix: string) => putThreads(saver, prefix, data)

const getLatest = (saver: BaseCheckpointSaver, prefix: string) => getLatestOf(saver, prefix, THREADS, 5)

const listAll = async (saver: BaseCheckpointSaver, prefix: string) => {
  let n = 0
  for (let t = 0; t < THREADS; t++) {
    for await (const tuple of saver.list({ configurable: { thread_id: `${prefix}-${t}` } })) {
      if (tuple.checkpoint.channel_values.messages === undefined) throw new Error("bad list")
      n++
    }
  }
  return n
}

type Op = "put" | "getTuple" | "list"
/** Operations per CPU-second (`put`…) and per wall-clock second (`wall.put`…). */
type Result = Record<Op, number> & { readonly wall: Record<Op, number> }

const measure = async (saver: BaseCheckpointSaver, prefix: string): Promise<Result> => {
  const put = await time(() => putAll(saver, prefix))
  const get = await time(() => getLatest(saver, prefix))
  const list = await time(() => listAll(saver, prefix))
  return {
    put: (put.ops / put.ms) * 1000,
    getTuple: (get.ops / get.ms) * 1000,
    list: (list.ops / list.ms) * 1000,
    wall: {
      put: (put.ops / put.wallMs) * 1000,
      getTuple: (get.ops / get.wallMs) * 1000,
      list: (list.ops / list.wallMs) * 1000
    }
  }
}

/** A step of `makeThread` as the agent stores it with messages as deltas. */
const asDelta = (step: Step, previous: Step | undefined) => {
  const { messages, ...values } = step.checkpoint.channel_values as { messages: Array<BaseMessage> }
  const added = messages.slice(
    (previous?.checkpoint.channel_values.messages as Array<unknown> | undefined)?.length ?? 0
  )
  return { ...step, checkpoint: { ...step.checkpoint, channel_values: values }, added }
}

const deltaData = data.map((steps) => steps.map((step, i) => asDelta(step, steps[i - 1])))

const putAllDelta = async (saver: BaseCheckpointSaver, prefix: string) => {
  let n = 0
  for (const [t, steps] of deltaData.entries()) {
    let config: RunnableConfig = { configurable: { thread_id: `${prefix}-${t}`, checkpoint_ns: "" } }
    for (const step of steps) {
      config = await saver.put(config, step.checkpoint, step.metadata, step.newVersions)
      await saver.putWrites(config, [["messages", step.added]], "agent")
      n++
    }
  }
  return n
}

const loadDelta = async (saver: BaseCheckpointSaver, prefix: string) => {
  let n = 0
  for (let round = 0; round < 5; round++) {
    for (let t = 0; t < THREADS; t++) {
      const config = { configurable: { thread_id: `${prefix}-${t}`, checkpoint_ns: "" } }
      const tuple = await saver.getTuple(config)
      const history = await saver.getDeltaChannelHistory({ config: tuple!.config, channels: ["messages"] })
      if (tuple === undefined || history.messages?.writes.length !== STEPS - 1) throw new Error("bad load")
      n++
    }
  }
  return n
}

const measureDelta = async (saver: BaseCheckpointSaver, prefix: string) => {
  const put = await time(() => putAllDelta(saver, prefix))
  const load = await time(() => loadDelta(saver, prefix))
  return { put: (put.ops / put.ms) * 1000, load: (load.ops / load.ms) * 1000 }
}

const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export default async () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-sqlite-"))
  try {
    const runs: Record<"plugboard" | "reference", Array<Result>> = { plugboard: [], reference: [] }
    const deltaRuns: Record<"plugboard" | "reference", Array<{ put: number; load: number }>> = {
      plugboard: [],
      reference: []
    }
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate who goes first, so cache warmth and CPU frequency favour neither.
      const order =
        round % 2 === 0 ? (["reference", "plugboard"] as const) : (["plugboard", "reference"] as const)
      for (const who of order) {
        const filename = join(dir, `${who}-${round}.sqlite`)
        if (who === "plugboard") {
          const saver = makeSqliteSaver({ filename, synchronous: "NORMAL" })
          runs[who].push(await measure(saver, "t"))
          deltaRuns[who].push(await measureDelta(saver, "d"))
          saver.close()
        } else {
          const db = new Database(filename)
          const saver = new ReferenceSaver(db)
          await saver.getTuple({ configurable: { thread_id: "warm" } }) // runs its setup (WAL)
          db.pragma("synchronous = NORMAL")
          runs[who].push(await measure(saver, "t"))
          deltaRuns[who].push(await measureDelta(saver, "d"))
          db.close()
        }
      }
    }
    const fmt = (n: number) => n.toFixed(0).padStart(7)
    // A shared machine skews wall time (CPU time far less): print the load with the figures.
    console.log(
      `load average at the end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`
    )
    console.log(
      `${THREADS} threads × ${STEPS} steps (agent-shaped state, docs/spec/graph-state.md, messages grow to ${STEPS}), WAL, synchronous=NORMAL, ${ROUNDS} alternating rounds, per CPU-second`
    )
    console.log(
      "                            plugboard  reference  ratio   (median: plugboard reference ratio)"
    )
    for (const op of ["put", "getTuple", "list"] as const) {
      const unit = op === "put" ? "put+putWrites/s" : op === "list" ? "tuples/s" : "reads/s"
      const ours = Math.max(...runs.plugboard.map((r) => r[op]))
      const ref = Math.max(...runs.reference.map((r) => r[op]))
      const oursMed = median(runs.plugboard.map((r) => r[op]))
      const refMed = median(runs.reference.map((r) => r[op]))
      console.log(
        `best  ${op.padEnd(9)}${unit.padEnd(16)}${fmt(ours)}    ${fmt(ref)}  ${(ours / ref).toFixed(2)}×   ` +
          `(${fmt(oursMed)} ${fmt(refMed)} ${(oursMed / refMed).toFixed(2)}×)`
      )
    }
    console.log("messages as deltas (the agent's shape on this saver), per CPU-second, median of rounds")
    for (const op of ["put", "load"] as const) {
      const unit = op === "put" ? "put+putWrites/s" : "getTuple+history/s"
      const oursMed = median(deltaRuns.plugboard.map((r) => r[op]))
      const refMed = median(deltaRuns.reference.map((r) => r[op]))
      console.log(
        `      ${op.padEnd(9)}${unit.padEnd(19)}${fmt(oursMed)}    ${fmt(refMed)}  ${(oursMed / refMed).toFixed(2)}×`
      )
    }
    console.log("wall clock, per second (median: plugboard reference ratio)")
    for (const op of ["put", "getTuple", "list"] as const) {
      const oursMed = median(runs.plugboard.map((r) => r.wall[op]))
      const refMed = median(runs.reference.map((r) => r.wall[op]))
      console.log(`      ${op.padEnd(9)}${fmt(oursMed)} ${fmt(refMed)} ${(oursMed / refMed).toFixed(2)}×`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
