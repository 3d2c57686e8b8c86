/**
 * Where a plugboard turn's CPU time goes, measured with V8's sampling profiler (in-process,
 * through `node:inspector`): 300 requests (agent build + first turn: load_capability → tool →
 * answer, 5 graph steps) at 5,000 plugins, MemorySaver, zero-latency scripted model, after a
 * warm-up. Each sample is attributed to the function on top of the stack (self time), by where
 * its source lives: plugboard's core, plugboard's LangGraph adapter (the graph's nodes, state,
 * events), the scripted model (a test double standing in for a provider's client), LangGraph and
 * LangChain, effect, and everything else (Node internals, garbage collection, the profiler).
 */
import { Session } from "node:inspector/promises"
import { Catalog } from "@plugboard/core"
import { createMainAgent, MemorySaver, prepareCatalog, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { syntheticPlugins } from "./syntheticCatalog.js"

const PLUGINS = 5_000
const WARMUP = 100
const TURNS = 300

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
}

const MODEL = (u: string) => u.includes("/packages/adapters/models/src/")

const AREAS: ReadonlyArray<readonly [string, (url: string) => boolean]> = [
  ["plugboard core (packages/core/src)", (u) => u.includes("/packages/core/src/")],
  [
    "plugboard LangGraph adapter (packages/adapters/langgraph/src)",
    (u) => u.includes("/packages/adapters/langgraph/src/")
  ],
  ["scripted model (packages/adapters/models/src, and the core code it calls)", MODEL],
  ["LangGraph + LangChain (@langchain/*)", (u) => u.includes("/@langchain/") || u.includes("langsmith")],
  ["effect", (u) => u.includes("/effect/dist/") || u.includes("/effect@")]
]

export default async () => {
  const catalog = Catalog.unsafeMake(syntheticPlugins(PLUGINS))
  prepareCatalog(catalog)
  const saver = new MemorySaver()
  const target = `plugin-${PLUGINS / 2 + 1}`
  const tool = `lookup_${PLUGINS / 2 + 1}_0`
  const turn = async (i: number) => {
    const agent = await createMainAgent({
      catalog,
      model: ScriptedChatModel.script([
        { tool: "load_capability", args: { names: [target] } },
        { tool, args: { query: "latest" } },
        "Here are the latest records."
      ]),
      checkpointer: saver,
      basePrompt: "You are a helpful assistant.",
      request: { did: "did:key:bench", sessionId: `profile-${i}`, requestId: `profile-${i}` }
    })
    await runTurn(agent, { message: "Show me the latest records." })
  }
  for (let i = 0; i < WARMUP; i++) await turn(i)
  const session = new Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: 100 })
  await session.post("Profiler.start")
  for (let i = WARMUP; i < WARMUP + TURNS; i++) await turn(i)
  const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: Profile }
  session.disconnect()

  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  // Work the scripted model asks of other code (it counts tokens with core's TokenCounter) is
  // the model's: a provider's client would do its own instead.
  const underModel = (id: number): boolean => {
    for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
      if (MODEL(byId.get(at)!.callFrame.url)) return true
    }
    return false
  }
  /** The area a frame's own code belongs to, if a named one. */
  const areaOf = (id: number): string | undefined => {
    const url = byId.get(id)!.callFrame.url
    if (url.includes("/packages/") && underModel(id)) return AREAS[2]![0]
    return AREAS.find(([, test]) => test(url))?.[0]
  }
  const OTHER = "other (Node internals, runtime, profiler)"
  const GC = "garbage collection"
  const self = new Map<string, number>()
  // The same samples charged to the nearest named area on the stack: a Node built-in (JSON,
  // crypto, promises) counts for the code that called it.
  const caller = new Map<string, number>()
  // plugboard's own functions, to see which of them cost most.
  const own = new Map<string, number>()
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1)
  let total = 0
  for (const id of profile.samples) {
    const node = byId.get(id)
    if (node === undefined) continue
    const name = node.callFrame.functionName
    // Samples taken while the process waited (between turns' async steps) are not turn work.
    if (name === "(idle)") continue
    total++
    const fallback = name === "(garbage collector)" ? GC : OTHER
    const area = areaOf(id) ?? fallback
    bump(self, area)
    let near: string | undefined
    for (let at: number | undefined = id; at !== undefined && near === undefined; at = parent.get(at))
      near = areaOf(at)
    bump(caller, near ?? fallback)
    if (area.startsWith("plugboard")) {
      const url = node.callFrame.url
      bump(own, `${name || "(anonymous)"} (${url.slice(url.lastIndexOf("/packages/") + 10)})`)
    }
  }
  console.log(
    `CPU profile of ${TURNS} requests (build + first turn) at ${PLUGINS.toLocaleString("en")} plugins: ${total.toLocaleString("en")} non-idle samples at 100 µs`
  )
  console.log("   self  with built-ins it called")
  const pct = (n: number | undefined) => `${((100 * (n ?? 0)) / total).toFixed(1).padStart(5)} %`
  for (const [area, n] of [...self].sort((a, b) => b[1] - a[1])) {
    console.log(`${pct(n)}  ${pct(caller.get(area))}  ${area}`)
  }
  console.log("plugboard's costliest functions (self time):")
  for (const [where, n] of [...own].sort((a, b) => b[1] - a[1]).slice(0, 8)) {
    console.log(`  ${((100 * n) / total).toFixed(1).padStart(5)} %  ${where}`)
  }
}
