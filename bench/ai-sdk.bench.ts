/**
 * `pnpm bench ai-sdk`: what `@plugboard/ai-sdk` costs an AI SDK app per request, against the same
 * app with the same offered tools bound by hand (docs/ai-sdk.md#what-it-costs).
 *
 * One request is one `generateText` call of one step on a catalog of 5,000 plugins (2 tools each,
 * 5 always-tier): the model calls an offered tool, the tool runs, the step ends. A zero-latency
 * model (an object of a few lines, no recording), so what is measured is the SDK and the adapter.
 * - plugboard: `board.turn({ messages, system })`, then `generateText` with its `system`, `tools`
 *   and `prepareStep`. The turn reads the thread's loads back from its messages, fixes the step's
 *   offer, gates the call and runs the handler through core (`ToolCall.execute`).
 * - by hand: a plain `tools` object of `tool({ description, inputSchema: jsonSchema(...), execute })`
 *   for exactly the tools plugboard offers that thread (names, descriptions, schemas, order), built
 *   once at start-up as an app would, the same system prompt string, and an `execute` that calls
 *   the same handler directly.
 * Two threads: a new one (meta-tools + always tier: 12 tools offered) and one whose 24 messages
 * loaded 3 plugins (18 tools). Samples alternate between the two apps, so both see the same machine
 * load: in batches of 50 requests, plugboard's and the hand-bound app's taking turns (ABBA). The
 * figure the target is on (≤ 1.1×) is CPU time (user + system) per request, plugboard's over the
 * hand-bound app's, in each of 7 rounds of 2,000 requests per app; the median round is reported
 * with the spread, since a shared machine's spikes land in one round, not in all. Wall time is the
 * median batch's, per request.
 */
import { loadavg } from "node:os"
import { createPlugboard } from "@plugboard/ai-sdk"
import { LoadedPlugins, Offer, SystemPrompt } from "@plugboard/core"
import { generateText, jsonSchema, type ModelMessage, stepCountIs, type ToolSet, tool } from "ai"
import { syntheticPlugins } from "./syntheticCatalog.js"

const PLUGINS = 5_000
const WARMUP = 500
const ROUNDS = 7
const SAMPLES = 2_000
const BATCH = 50
const SYSTEM = "You are a helpful assistant."

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}

/** A model that always calls `toolName`; nothing recorded, nothing awaited. */
const callingModel = (toolName: string) => ({
  specificationVersion: "v3" as const,
  provider: "bench",
  modelId: "bench",
  supportedUrls: {},
  doGenerate: async () => ({
    content: [{ type: "tool-call" as const, toolCallId: "call_1", toolName, input: '{"query":"latest"}' }],
    finishReason: { unified: "tool-calls" as const, raw: undefined },
    usage,
    warnings: []
  }),
  doStream: async () => {
    throw new Error("not used")
  }
})

/** A history of `turns` user/assistant exchanges, each loading one of `loads` first. */
const historyLoading = (loads: ReadonlyArray<string>, turns: number): Array<ModelMessage> => {
  const out: Array<ModelMessage> = []
  for (let t = 0; t < turns; t++) {
    out.push({ role: "user", content: `Question ${t}` })
    const name = loads[t]
    if (name === undefined) {
      out.push({ role: "assistant", content: `Answer ${t}` })
      continue
    }
    out.push({
      role: "assistant",
      content: [
        { type: "tool-call", toolCallId: `h${t}`, toolName: "load_capability", input: { names: [name] } }
      ]
    })
    out.push({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: `h${t}`,
          toolName: "load_capability",
          output: { type: "text", value: JSON.stringify({ newlyLoaded: [name], results: [] }) }
        }
      ]
    })
    out.push({ role: "assistant", content: `Answer ${t}` })
  }
  return out
}

const cpuMicros = (c: NodeJS.CpuUsage) => c.user + c.system
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export default async () => {
  const plugins = syntheticPlugins(PLUGINS)
  const board = await createPlugboard({ plugins })
  const handlers = new Map(plugins.flatMap((p) => (p.tools ?? []).map((t) => [t.name, t.handler] as const)))
  console.log(
    `${PLUGINS} plugins; one generateText step per request (a tool call); ${ROUNDS} rounds of ${SAMPLES} requests per app after ${WARMUP} warm-up, in alternating batches of ${BATCH}`
  )
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`
  )
  console.log(
    "thread                      tools offered  plugboard CPU  by-hand CPU  ratio (median round)      median wall (pb / hand)"
  )

  const threads = [
    { label: "new thread", loads: [] as Array<string> },
    { label: "3 plugins loaded, 24 msgs", loads: ["plugin-101", "plugin-2500", "plugin-4200"] }
  ]
  for (const { label, loads } of threads) {
    const history = historyLoading(loads, 8)
    const messages: Array<ModelMessage> = [
      ...history,
      { role: "user", content: "Show me the latest records." }
    ]
    const offered = Offer.offer(board.catalog, LoadedPlugins.union([], loads))
    const system = SystemPrompt.compose({ basePrompt: SYSTEM, catalog: board.catalog, loadedPlugins: loads })
    // The app that binds plugboard's offer by hand: built once, as an app builds its tools.
    const handBound: ToolSet = {}
    for (const t of offered) {
      const handler = handlers.get(t.name)
      handBound[t.name] = tool({
        description: t.description,
        inputSchema: jsonSchema<{ query: string }>(t.parameters as never),
        execute: async (input: { query: string }) =>
          handler === undefined ? "" : JSON.stringify(handler(input, undefined as never))
      })
    }
    const called = loads.length > 0 ? "lookup_2500_1" : "lookup_3_0"
    const model = callingModel(called)
    const viaPlugboard = async () => {
      const turn = board.turn({ messages, system: SYSTEM })
      const r = await generateText({
        model,
        system: turn.system,
        messages,
        tools: turn.tools,
        prepareStep: turn.prepareStep,
        stopWhen: stepCountIs(1)
      })
      if (r.toolResults[0]?.toolName !== called) throw new Error(`plugboard did not run ${called}`)
    }
    const byHand = async () => {
      const r = await generateText({ model, system, messages, tools: handBound, stopWhen: stepCountIs(1) })
      if (r.toolResults[0]?.toolName !== called) throw new Error(`the hand-bound app did not run ${called}`)
    }
    for (let i = 0; i < WARMUP; i++) {
      await viaPlugboard()
      await byHand()
    }
    const rounds: Array<{ pb: number; hand: number; pbWall: number; handWall: number }> = []
    for (let r = 0; r < ROUNDS; r++) {
      let pbCpu = 0
      let handCpu = 0
      const pbWall: Array<number> = []
      const handWall: Array<number> = []
      // Batches of BATCH requests, the two apps taking turns (ABBA), each batch's CPU read once:
      // a process's CPU time is too coarse to read per request of a tenth of a millisecond.
      for (let b = 0; b < SAMPLES / BATCH; b++) {
        const order = b % 2 === 0 ? [viaPlugboard, byHand] : [byHand, viaPlugboard]
        for (const run of order) {
          const c0 = process.cpuUsage()
          const t0 = performance.now()
          for (let i = 0; i < BATCH; i++) await run()
          const wall = (performance.now() - t0) / BATCH
          const cpu = cpuMicros(process.cpuUsage(c0))
          if (run === viaPlugboard) {
            pbCpu += cpu
            pbWall.push(wall)
          } else {
            handCpu += cpu
            handWall.push(wall)
          }
        }
      }
      rounds.push({
        pb: pbCpu / SAMPLES,
        hand: handCpu / SAMPLES,
        pbWall: median(pbWall),
        handWall: median(handWall)
      })
    }
    const ratios = rounds.map((r) => r.pb / r.hand).sort((a, b) => a - b)
    const mid = rounds.find((r) => r.pb / r.hand === ratios[Math.floor(ROUNDS / 2)])!
    const ratio = mid.pb / mid.hand
    console.log(
      `${label.padEnd(27)} ${String(offered.length).padStart(13)}  ${(mid.pb / 1000).toFixed(3)} ms      ${(mid.hand / 1000).toFixed(3)} ms     ${ratio.toFixed(2)}× (rounds ${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)})  ${mid.pbWall.toFixed(3)} / ${mid.handWall.toFixed(3)} ms   ${ratio <= 1.1 ? "(target ≤ 1.1×: met)" : "(target ≤ 1.1×: MISSED)"}`
    )
  }
}
