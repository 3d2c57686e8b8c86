/**
 * A model for the AI SDK's own test double (`MockLanguageModelV3` of `ai/test`) that plays a
 * script: each step answers with tool calls or text, and every call's options (the tools and the
 * prompt the SDK sent) are kept for the test to read.
 */
import type { CatalogTurn } from "@plugboard/ai-sdk"
import { generateText, simulateReadableStream, stepCountIs } from "ai"
import { MockLanguageModelV3 } from "ai/test"

/** One scripted answer: tool calls (name, arguments) or a text. */
export type ScriptStep =
  | { readonly calls: ReadonlyArray<readonly [string, unknown]> }
  | { readonly text: string }

/** What the SDK sent the model on one call. */
export interface SentCall {
  readonly tools: ReadonlyArray<{
    readonly name: string
    readonly description?: string
    readonly inputSchema: unknown
  }>
  readonly prompt: ReadonlyArray<{ readonly role: string; readonly content: unknown }>
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}

let ids = 0

const contentOf = (step: ScriptStep) =>
  "text" in step
    ? [{ type: "text" as const, text: step.text }]
    : step.calls.map(([toolName, args]) => ({
        type: "tool-call" as const,
        toolCallId: `call_${++ids}`,
        toolName,
        input: JSON.stringify(args)
      }))

const finishOf = (step: ScriptStep) =>
  ({ unified: "text" in step ? "stop" : "tool-calls", raw: undefined }) as const

/** The test doubles of one AI SDK major (`ai/test` and `simulateReadableStream`). */
export interface SdkDoubles {
  readonly MockLanguageModelV3: typeof MockLanguageModelV3
  readonly simulateReadableStream: typeof simulateReadableStream
}

/**
 * A scripted model; `sent` fills as the SDK calls it. Past the script's end it answers "done".
 * `sdk` picks the AI SDK major whose doubles build it (7 by default).
 */
export const scriptedModel = (
  script: ReadonlyArray<ScriptStep>,
  sdk: SdkDoubles = { MockLanguageModelV3, simulateReadableStream }
) => {
  const sent: Array<SentCall> = []
  let at = 0
  const next = (options: unknown): ScriptStep => {
    const o = options as { tools?: SentCall["tools"]; prompt: SentCall["prompt"] }
    sent.push({ tools: o.tools ?? [], prompt: o.prompt })
    return script[at++] ?? { text: "done" }
  }
  const model = new sdk.MockLanguageModelV3({
    doGenerate: async (options) => {
      const step = next(options)
      return { content: contentOf(step), finishReason: finishOf(step), usage, warnings: [] }
    },
    doStream: async (options) => {
      const step = next(options)
      const parts: Array<unknown> = [{ type: "stream-start", warnings: [] }]
      for (const c of contentOf(step)) {
        if (c.type === "text") {
          parts.push(
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: c.text },
            { type: "text-end", id: "t" }
          )
        } else parts.push(c)
      }
      parts.push({ type: "finish", finishReason: finishOf(step), usage })
      return { stream: sdk.simulateReadableStream({ chunks: parts as never[], chunkDelayInMs: null }) }
    }
  })
  return { model, sent }
}

/** The text of every tool result the model was sent on a call, by tool name. */
export const toolResultsSent = (call: SentCall): Array<{ toolName: string; text: string; error: boolean }> =>
  call.prompt
    .filter((m) => m.role === "tool")
    .flatMap((m) => m.content as Array<{ toolName: string; output: { type: string; value: unknown } }>)
    .map((p) => ({
      toolName: p.toolName,
      text: typeof p.output.value === "string" ? p.output.value : JSON.stringify(p.output.value),
      error: p.output.type.startsWith("error")
    }))

/** What `play` wires of a turn (all of it by default) and how many steps it allows. */
export interface PlayOptions {
  readonly prepareStep?: boolean
  readonly repair?: boolean
  readonly steps?: number
}

/** One `generateText` (AI SDK 7) of `prompt` on a turn's tools, its hooks wired as `options` say. */
export const play = (
  turn: CatalogTurn,
  model: ReturnType<typeof scriptedModel>["model"],
  prompt: string,
  options: PlayOptions = {}
) =>
  generateText({
    model,
    system: turn.system,
    prompt,
    tools: turn.tools,
    ...(options.prepareStep === false ? {} : { prepareStep: turn.prepareStep }),
    ...(options.repair === false ? {} : { repairToolCall: turn.repairToolCall }),
    stopWhen: stepCountIs(options.steps ?? 8)
  })
