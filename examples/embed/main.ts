/**
 * Embedding plugboard in your own program, without `@plugboard/host-node`: build the catalog
 * once, then per request build an agent on the LangGraph adapter and run a turn. Here the model is
 * the offline scripted router (no key, no network) and state lives in LangGraph's in-memory
 * checkpointer; swap in a provider model (`@plugboard/models`) and a persistent
 * checkpointer (`@plugboard/sqlite`) for real use.
 *
 * Run it: pnpm tsx --conditions=@plugboard/source examples/embed/main.ts
 */
import { pathToFileURL } from "node:url"
import { Catalog, type EventSink } from "@plugboard/core"
import { createMainAgent, MemorySaver, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { type AuditRecord, auditRecords, ExampleStore, makeExamplePlugins } from "../catalog/index.js"

/** What one turn of the demo produced. */
export interface EmbedTurn {
  readonly message: string
  readonly answer: string
  /** The `tool_call` events of the turn (`isRunning` then `done` for each call). */
  readonly events: ReadonlyArray<EventSink.AgentEvent>
  /** The thread's loaded plugins after the turn: it only grows. */
  readonly loadedPlugins: ReadonlyArray<string>
}

/** What `main` returns (and prints). */
export interface EmbedResult {
  readonly turns: ReadonlyArray<EmbedTurn>
  /** What the silent `audit-log` plugin recorded: one record per model call. */
  readonly audit: ReadonlyArray<AuditRecord>
  /** How many times the model was called, across both turns. */
  readonly modelCalls: number
}

/** The two user messages of the demo, in one conversation thread. */
export const MESSAGES = ["What's the weather in Berlin?", "Convert 250 euros to dollars."] as const

const describeEvent = (e: EventSink.AgentEvent): string =>
  e._tag === "tool_call"
    ? `  tool_call ${e.toolName} ${e.status} ${JSON.stringify(e.args)}${
        e.output === undefined ? "" : ` -> ${String(e.output).slice(0, 100)}`
      }`
    : `  ${e._tag}`

/** Runs the demo: two turns of one thread on the examples' catalog. `log` receives each printed line. */
export const main = async (log: (line: string) => void = console.log): Promise<EmbedResult> => {
  // Boot: plugins → catalog, once. A hard manifest error would throw here with every reason.
  const store = new ExampleStore()
  const catalog = Catalog.unsafeMake(makeExamplePlugins({ store }))
  const model = ScriptedChatModel.router({ catalog })
  const checkpointer = new MemorySaver()

  const turns: Array<EmbedTurn> = []
  for (const message of MESSAGES) {
    // Per request: an agent for this user and session (the session id is the thread id).
    const agent = await createMainAgent({
      catalog,
      model,
      checkpointer,
      basePrompt: "You are a helpful assistant.",
      request: { did: "did:key:z6MkEmbedDemoUser", sessionId: "embed-demo" }
    })
    const turn = await runTurn(agent, { message })
    const loadedPlugins = [...turn.state.loadedPlugins]
    turns.push({ message, answer: turn.answer, events: turn.events, loadedPlugins })
    log(`> ${message}`)
    for (const e of turn.events) log(describeEvent(e))
    log(`< ${turn.answer}`)
    log(`  loadedPlugins: ${JSON.stringify(loadedPlugins)}`)
  }

  const audit = auditRecords(store)
  log(
    `audit-log (silent plugin): ${audit.map((r) => r.offeredTools).join(", ")} tools offered per model call`
  )
  return { turns, audit, modelCalls: model.calls.length }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main()
