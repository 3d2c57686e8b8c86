/**
 * A chat completions request body, checked and translated into LangChain's terms: its messages as
 * LangChain messages, its function tools as the OpenAI-format definitions every LangChain chat
 * model binds, its `tool_choice`, and how to answer (streamed, with usage). Every problem is one
 * `invalid-request` naming the field at fault, worded as OpenAI words its own where it has one, so
 * a client under test learns what it sent wrong.
 */
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  type MessageContent,
  SystemMessage,
  ToolMessage
} from "@langchain/core/messages"
import { Either } from "effect"
import { invalid, type OpenAiWireError } from "./error.js"

/** A function tool as the request gave it (OpenAI format, which `bindTools` accepts). */
export interface FunctionTool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description?: string | undefined
    readonly parameters?: Record<string, unknown> | undefined
  }
}

/** `tool_choice`: the modes, or one tool by name. */
export type ToolChoice = "auto" | "none" | "required" | { readonly name: string }

/** A checked request. */
export interface ChatRequest {
  readonly messages: ReadonlyArray<BaseMessage>
  readonly tools: ReadonlyArray<FunctionTool>
  readonly toolChoice: ToolChoice
  readonly stream: boolean
  readonly includeUsage: boolean
}

type Result<A> = Either.Either<A, OpenAiWireError>

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

const describe = (v: unknown): string =>
  v === null
    ? "null"
    : Array.isArray(v)
      ? "an array"
      : typeof v === "object"
        ? "an object"
        : JSON.stringify(v)

// OpenAI's own rule for function names.
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/** Text-only content (system, developer, tool): a string or an array of `text` parts. */
const textContent = (content: unknown, param: string, nullable = false): Result<string> => {
  if (typeof content === "string") return Either.right(content)
  if (nullable && (content === null || content === undefined)) return Either.right("")
  if (!Array.isArray(content))
    return Either.left(
      invalid(`${param} must be a string or an array of text parts, got ${describe(content)}.`, param)
    )
  const texts: Array<string> = []
  for (const [i, part] of content.entries()) {
    // An assistant's refusal is text it said.
    const text = isRecord(part) ? (part.type === "refusal" ? part.refusal : part.text) : undefined
    if (!isRecord(part) || (part.type !== "text" && part.type !== "refusal") || typeof text !== "string")
      return Either.left(
        invalid(`${param}[${i}] must be a text part ({"type":"text","text":"..."}).`, `${param}[${i}]`)
      )
    texts.push(text)
  }
  return Either.right(texts.join(""))
}

/**
 * A user's content: a string, or parts passed on as LangChain content blocks (which take
 * OpenAI's part shapes): `text` parts must carry text; images, audio and files go to the model
 * as they came (the scripted model reads the text only).
 */
const userContent = (content: unknown, param: string): Result<MessageContent> => {
  if (typeof content === "string") return Either.right(content)
  if (!Array.isArray(content) || content.length === 0)
    return Either.left(
      invalid(
        `${param} must be a string or a non-empty array of content parts, got ${describe(content)}.`,
        param
      )
    )
  for (const [i, part] of content.entries()) {
    if (!isRecord(part) || typeof part.type !== "string")
      return Either.left(invalid(`${param}[${i}] must be a content part with a "type".`, `${param}[${i}]`))
    if (part.type === "text" && typeof part.text !== "string")
      return Either.left(invalid(`${param}[${i}].text must be a string.`, `${param}[${i}].text`))
  }
  return Either.right(content as MessageContent)
}

interface Call {
  readonly id: string
  readonly name: string
}

const toolCalls = (
  raw: unknown,
  param: string
): Result<ReadonlyArray<Call & { args: Record<string, unknown> }>> => {
  if (raw === undefined || raw === null) return Either.right([])
  if (!Array.isArray(raw)) return Either.left(invalid(`${param} must be an array.`, param))
  const calls: Array<Call & { args: Record<string, unknown> }> = []
  for (const [j, c] of raw.entries()) {
    const at = `${param}[${j}]`
    const fn = isRecord(c) ? c.function : undefined
    if (
      !isRecord(c) ||
      typeof c.id !== "string" ||
      c.id === "" ||
      !isRecord(fn) ||
      typeof fn.name !== "string"
    )
      return Either.left(
        invalid(
          `${at} must be {"id", "type":"function", "function":{"name","arguments"}} with a non-empty id.`,
          at
        )
      )
    if (c.type !== undefined && c.type !== "function")
      return Either.left(invalid(`${at}.type must be "function", got ${describe(c.type)}.`, `${at}.type`))
    // Arguments are a JSON object written as a string; an empty string is a call without any.
    const text = fn.arguments ?? ""
    let args: unknown = {}
    if (typeof text !== "string")
      return Either.left(
        invalid(`${at}.function.arguments must be a string of JSON.`, `${at}.function.arguments`)
      )
    if (text.trim() !== "") {
      try {
        args = JSON.parse(text)
      } catch {
        args = undefined
      }
    }
    if (!isRecord(args))
      return Either.left(
        invalid(
          `${at}.function.arguments must be a JSON object, got ${JSON.stringify(text.slice(0, 80))}.`,
          `${at}.function.arguments`
        )
      )
    calls.push({ id: c.id, name: fn.name, args })
  }
  return Either.right(calls)
}

/** The messages, and every assistant tool call answered by a tool message that follows it. */
const messages = (raw: unknown): Result<ReadonlyArray<BaseMessage>> => {
  if (!Array.isArray(raw) || raw.length === 0)
    return Either.left(invalid(`'messages' must be a non-empty array, got ${describe(raw)}.`, "messages"))
  const out: Array<BaseMessage> = []
  // The calls of the last assistant message that tool messages have not answered yet.
  let pending = new Map<string, Call>()
  let callsOf: ReadonlyMap<string, Call> = new Map()
  const unanswered = (at: string): OpenAiWireError =>
    invalid(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending.keys()].join(", ")}`,
      at
    )
  for (const [i, m] of raw.entries()) {
    const at = `messages[${i}]`
    if (!isRecord(m)) return Either.left(invalid(`${at} must be an object, got ${describe(m)}.`, at))
    if (m.role !== "tool" && pending.size > 0) return Either.left(unanswered(at))
    switch (m.role) {
      case "system":
      case "developer": {
        const text = textContent(m.content, `${at}.content`)
        if (Either.isLeft(text)) return Either.left(text.left)
        out.push(new SystemMessage(text.right))
        break
      }
      case "user": {
        const content = userContent(m.content, `${at}.content`)
        if (Either.isLeft(content)) return Either.left(content.left)
        out.push(new HumanMessage({ content: content.right }))
        break
      }
      case "assistant": {
        const text = textContent(m.content, `${at}.content`, true)
        if (Either.isLeft(text)) return Either.left(text.left)
        const calls = toolCalls(m.tool_calls, `${at}.tool_calls`)
        if (Either.isLeft(calls)) return Either.left(calls.left)
        pending = new Map(calls.right.map((c) => [c.id, c]))
        callsOf = new Map(pending)
        out.push(
          new AIMessage({
            content: text.right,
            tool_calls: calls.right.map((c) => ({ id: c.id, name: c.name, args: c.args, type: "tool_call" }))
          })
        )
        break
      }
      case "tool": {
        if (typeof m.tool_call_id !== "string")
          return Either.left(invalid(`${at}.tool_call_id must be a string.`, `${at}.tool_call_id`))
        const call = callsOf.get(m.tool_call_id)
        if (call === undefined)
          return Either.left(
            invalid(
              `${at} answers tool_call_id ${JSON.stringify(m.tool_call_id)}, which matches no tool call of the assistant message before it. Messages with role 'tool' must be a response to a preceding message with 'tool_calls'.`,
              `${at}.tool_call_id`
            )
          )
        const text = textContent(m.content, `${at}.content`)
        if (Either.isLeft(text)) return Either.left(text.left)
        pending.delete(call.id)
        out.push(new ToolMessage({ content: text.right, tool_call_id: call.id, name: call.name }))
        break
      }
      default:
        return Either.left(
          invalid(
            `${at}.role must be one of 'system', 'developer', 'user', 'assistant' or 'tool', got ${describe(m.role)}.`,
            `${at}.role`
          )
        )
    }
  }
  if (pending.size > 0) return Either.left(unanswered(`messages[${raw.length}]`))
  return Either.right(out)
}

const tools = (raw: unknown): Result<ReadonlyArray<FunctionTool>> => {
  if (raw === undefined || raw === null) return Either.right([])
  if (!Array.isArray(raw))
    return Either.left(invalid(`'tools' must be an array, got ${describe(raw)}.`, "tools"))
  const out: Array<FunctionTool> = []
  const seen = new Set<string>()
  for (const [i, t] of raw.entries()) {
    const at = `tools[${i}]`
    if (!isRecord(t) || t.type !== "function")
      return Either.left(
        invalid(
          `${at} must be a function tool ({"type":"function","function":{...}}); no other tool type is served.`,
          `${at}.type`
        )
      )
    const fn = t.function
    if (!isRecord(fn) || typeof fn.name !== "string" || !TOOL_NAME.test(fn.name))
      return Either.left(
        invalid(`${at}.function.name must match ^[a-zA-Z0-9_-]{1,64}$.`, `${at}.function.name`)
      )
    if (seen.has(fn.name))
      return Either.left(
        invalid(`Duplicate tool name ${JSON.stringify(fn.name)} in 'tools'.`, `${at}.function.name`)
      )
    seen.add(fn.name)
    if (fn.description !== undefined && typeof fn.description !== "string")
      return Either.left(
        invalid(`${at}.function.description must be a string.`, `${at}.function.description`)
      )
    if (fn.parameters !== undefined && !isRecord(fn.parameters))
      return Either.left(
        invalid(`${at}.function.parameters must be a JSON Schema object.`, `${at}.function.parameters`)
      )
    out.push({
      type: "function",
      function: {
        name: fn.name,
        ...(fn.description === undefined ? {} : { description: fn.description }),
        parameters: fn.parameters ?? { type: "object", properties: {} }
      }
    })
  }
  return Either.right(out)
}

const toolChoice = (raw: unknown, offered: ReadonlyArray<FunctionTool>): Result<ToolChoice> => {
  if (raw === undefined || raw === null) return Either.right("auto")
  if (raw === "auto" || raw === "none" || raw === "required") return Either.right(raw)
  const name = isRecord(raw) && isRecord(raw.function) ? raw.function.name : undefined
  if (!isRecord(raw) || raw.type !== "function" || typeof name !== "string")
    return Either.left(
      invalid(
        `'tool_choice' must be "auto", "none", "required" or {"type":"function","function":{"name":...}}, got ${describe(raw)}.`,
        "tool_choice"
      )
    )
  if (!offered.some((t) => t.function.name === name))
    return Either.left(
      invalid(`'tool_choice' names ${JSON.stringify(name)}, which is not in 'tools'.`, "tool_choice")
    )
  return Either.right({ name })
}

/**
 * The request, checked. Sampling parameters (`temperature`, `max_tokens`, ...) and `model` are
 * accepted and not used: the served model is the one the server was started with.
 */
export const parseChatRequest = (body: unknown): Result<ChatRequest> => {
  if (!isRecord(body)) return Either.left(invalid(`The body must be a JSON object, got ${describe(body)}.`))
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean")
    return Either.left(invalid(`'stream' must be a boolean, got ${describe(body.stream)}.`, "stream"))
  if (body.n !== undefined && body.n !== null && body.n !== 1)
    return Either.left(invalid(`'n' must be 1: this server answers with one choice.`, "n"))
  const parsed = messages(body.messages)
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  const offered = tools(body.tools)
  if (Either.isLeft(offered)) return Either.left(offered.left)
  const choice = toolChoice(body.tool_choice, offered.right)
  if (Either.isLeft(choice)) return Either.left(choice.left)
  const options = body.stream_options
  return Either.right({
    messages: parsed.right,
    tools: offered.right,
    toolChoice: choice.right,
    stream: body.stream === true,
    includeUsage: body.stream === true && isRecord(options) && options.include_usage === true
  })
}
