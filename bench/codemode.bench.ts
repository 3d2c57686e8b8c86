/**
 * `pnpm bench codemode`: what code mode saves on requests of several steps (docs/code-mode.md#what-it-saves).
 *
 * Each task is one request about several entities on the examples' catalog (3 to 10 calls of one
 * tool), run as one turn of the LangGraph loop with the scripted router, twice:
 * - without code mode: the router calls the tool for one entity per model call, reading each
 *   answer before the next (`internal/fanOut.ts`), then answers;
 * - with code mode (`CODE_MODE=on`, QuickJS): the router writes one `run_code` program that makes
 *   every call and returns the answers, then answers.
 * Both load the plugin first. Every model call's request is serialised as an OpenAI
 * chat-completions body (its messages, system prompt included, and its tools) and counted with
 * o200k (`@plugboard/tokenizers`, exact); the figures are the sums per task. Each run is checked:
 * the tool ran once per entity, through the gate, and the answer names every entity.
 */

import { QuickJsSandbox } from "@plugboard/codemode"
import type { EventSink, ToolSpec } from "@plugboard/core"
import { createMainAgent, MemorySaver, runTurn } from "@plugboard/langgraph"
import { decide, ScriptedChatModel } from "@plugboard/models"
import { loadTiktokenCounter } from "@plugboard/tokenizers"
import { Effect } from "effect"
import { exampleCatalog } from "../examples/catalog/index.js"

interface Task {
  readonly kind: string
  readonly request: string
  readonly tool: string
  readonly entities: ReadonlyArray<string>
}

/** The workload: one request per kind, written from each plugin's purpose. */
export const TASKS: ReadonlyArray<Task> = [
  {
    kind: "weather in several cities",
    request: "What's the weather in Berlin, Paris, Rome and Madrid: which is warmest?",
    tool: "get_current_weather",
    entities: ["Berlin", "Paris", "Rome", "Madrid"]
  },
  {
    kind: "share prices",
    request: "What's the share price of ACME, GLBX and INIT?",
    tool: "stock_quote",
    entities: ["ACME", "GLBX", "INIT"]
  },
  {
    kind: "crypto prices",
    request: "What's the bitcoin, ethereum and solana price in euros?",
    tool: "crypto_price",
    entities: ["bitcoin", "ethereum", "solana"]
  },
  {
    kind: "flight statuses",
    request: "Is flight TP1234, LH1169 or BA501 delayed?",
    tool: "flight_status",
    entities: ["TP1234", "LH1169", "BA501"]
  },
  {
    kind: "package versions",
    request: "What's the latest version of the effect, vitest, requests and serde package?",
    tool: "latest_version",
    entities: ["effect", "vitest", "requests", "serde"]
  },
  {
    kind: "hotels in several cities",
    request: "Find me a hotel in Lisbon, Porto, Madrid, Seville, Valencia and Barcelona.",
    tool: "search_hotels",
    entities: ["Lisbon", "Porto", "Madrid", "Seville", "Valencia", "Barcelona"]
  },
  {
    kind: "forecasts for ten cities",
    request:
      "Forecast for Tokyo, Osaka, Seoul, Beijing, Shanghai, Taipei, Manila, Hanoi, Bangkok and Jakarta this week.",
    tool: "get_weather_forecast",
    entities: [
      "Tokyo",
      "Osaka",
      "Seoul",
      "Beijing",
      "Shanghai",
      "Taipei",
      "Manila",
      "Hanoi",
      "Bangkok",
      "Jakarta"
    ]
  }
]

/** What the body reads of a LangChain message (the bench does not import LangChain itself). */
interface Message {
  readonly type: string
  readonly content: unknown
  readonly tool_calls?: ReadonlyArray<{ readonly id?: string; readonly name: string; readonly args: unknown }>
  readonly tool_call_id?: string
}

const role = (m: Message): string =>
  ({ human: "user", ai: "assistant", system: "system", tool: "tool" })[m.type as string] ?? m.type

/** One model call's request as an OpenAI chat-completions body: what a provider is sent. */
const wireBody = (messages: ReadonlyArray<Message>, tools: ReadonlyArray<ToolSpec.ToolSpec>): string =>
  JSON.stringify({
    messages: messages.map((m) => {
      const calls = m.tool_calls
      return {
        role: role(m),
        content: typeof m.content === "string" ? m.content : JSON.stringify(m.content),
        ...(calls === undefined || calls.length === 0
          ? {}
          : {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: "function",
                function: { name: c.name, arguments: JSON.stringify(c.args) }
              }))
            }),
        ...(m.tool_call_id === undefined ? {} : { tool_call_id: m.tool_call_id })
      }
    }),
    tools: tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters }
    }))
  })

interface Run {
  readonly tokens: number
  readonly modelCalls: number
  readonly toolCalls: number
  readonly answer: string
}

const runTask = async (
  task: Task,
  codeMode: boolean,
  count: (text: string) => number,
  sandbox: Awaited<ReturnType<typeof makeSandbox>>
): Promise<Run> => {
  const bodies: Array<string> = []
  const model = new ScriptedChatModel({
    model: "scripted-router",
    respond: (turn) => {
      bodies.push(wireBody(turn.messages as unknown as ReadonlyArray<Message>, turn.tools ?? []))
      return decide({ catalog: exampleCatalog }, turn)
    }
  })
  const events: Array<EventSink.AgentEvent> = []
  const agent = await createMainAgent({
    catalog: exampleCatalog,
    model,
    checkpointer: new MemorySaver(),
    basePrompt: "You are a helpful assistant.",
    request: { did: "did:key:bench", sessionId: `${task.tool}-${codeMode ? "code" : "direct"}` },
    eventSink: { emit: (e) => Effect.sync(() => void events.push(e)) },
    ...(codeMode ? { codeMode: { sandbox } } : {})
  })
  const result = await runTurn(agent, { message: task.request })
  await agent.events.flush()
  const done = events.filter(
    (e): e is EventSink.AgentEvent & { _tag: "tool_call" } =>
      e._tag === "tool_call" && (e as { status?: string }).status === "done"
  )
  const calls = done.filter((e) => e.toolName === task.tool)
  const failed = done.filter((e) => e.isError === true)
  if (calls.length !== task.entities.length || failed.length > 0)
    throw new Error(
      `${task.kind} (${codeMode ? "code mode" : "direct"}): ${calls.length} calls of ${task.tool} for ${task.entities.length} entities, ${failed.length} failed: ${JSON.stringify(failed.map((f) => f.output))}`
    )
  const answer = String(result.message.content)
  for (const entity of task.entities)
    if (!answer.includes(entity) && !JSON.stringify(calls.map((c) => c.args)).includes(entity))
      throw new Error(`${task.kind}: the answer does not name ${entity}`)
  return {
    tokens: bodies.reduce((sum, b) => sum + count(b), 0),
    modelCalls: bodies.length,
    toolCalls: calls.length,
    answer
  }
}

const makeSandbox = () => Effect.runPromise(QuickJsSandbox.make())

const pad = (s: string | number, n: number) => String(s).padStart(n)
const pct = (before: number, after: number) => `${(100 * (1 - after / before)).toFixed(1)}%`

export default async () => {
  const counter = await loadTiktokenCounter("o200k")
  const count = (text: string) => counter.count(text)
  const sandbox = await makeSandbox()
  console.log(
    `code mode on the examples' catalog (${exampleCatalog.entries.length} plugins), sandbox ${sandbox.name}`
  )
  console.log(
    `${"task".padEnd(26)} ${pad("calls", 5)} | ${pad("tokens direct", 13)} ${pad("code", 7)} ${pad("saved", 7)} | ${pad("model calls direct", 18)} ${pad("code", 4)} ${pad("saved", 6)}`
  )
  let direct = { tokens: 0, modelCalls: 0 }
  let code = { tokens: 0, modelCalls: 0 }
  for (const task of TASKS) {
    const a = await runTask(task, false, count, sandbox)
    const b = await runTask(task, true, count, sandbox)
    direct = { tokens: direct.tokens + a.tokens, modelCalls: direct.modelCalls + a.modelCalls }
    code = { tokens: code.tokens + b.tokens, modelCalls: code.modelCalls + b.modelCalls }
    console.log(
      `${task.kind.padEnd(26)} ${pad(task.entities.length, 5)} | ${pad(a.tokens, 13)} ${pad(b.tokens, 7)} ${pad(pct(a.tokens, b.tokens), 7)} | ${pad(a.modelCalls, 18)} ${pad(b.modelCalls, 4)} ${pad(pct(a.modelCalls, b.modelCalls), 6)}`
    )
  }
  console.log(
    `${"all tasks".padEnd(26)} ${pad("", 5)} | ${pad(direct.tokens, 13)} ${pad(code.tokens, 7)} ${pad(pct(direct.tokens, code.tokens), 7)} | ${pad(direct.modelCalls, 18)} ${pad(code.modelCalls, 4)} ${pad(pct(direct.modelCalls, code.modelCalls), 6)}`
  )
  console.log("target: >= 50% fewer tokens and >= 50% fewer model calls on tasks of >= 3 calls")
}
