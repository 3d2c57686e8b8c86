/**
 * Local fake LLM servers (127.0.0.1, random port) speaking each provider's chat wire format, so
 * the official `@langchain/*` classes can run a real HTTP exchange with no network: OpenAI's
 * `/chat/completions` (JSON or SSE), Anthropic's `/v1/messages` (JSON or SSE) and Ollama's
 * `/api/chat` (JSON or NDJSON). Each server replays a script of replies — a tool call or a text —
 * and records every request it received (path, headers, parsed body) for the test to inspect.
 * Streamed replies are split into several chunks (tool arguments too), so the SDKs' reassembly is
 * exercised. Anything the script does not expect is answered 400 (never retried by the SDKs), so
 * a wrong request fails the test at once instead of timing out in retries.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** A provider's JSON, read loosely: the tests assert on its shape. */
// biome-ignore lint/suspicious/noExplicitAny: provider JSON of any shape
export type Json = any

/** The wire formats the fakes speak. */
export type Wire = "openai" | "anthropic" | "ollama"

/** One tool call a scripted reply makes. */
export interface Call {
  readonly name: string
  readonly args: Readonly<Record<string, unknown>>
}

/** One scripted reply: a tool call, several tool calls in one reply, or a text answer. */
export type Step =
  | { readonly call: Call }
  | { readonly calls: ReadonlyArray<Call> }
  | { readonly text: string }
  /** An HTTP error with the provider's error body. */
  | { readonly fail: number }

/** A step the fake answers with a message. */
type Reply = Exclude<Step, { readonly fail: number }>

/** One request the fake received. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: Json
}

/** A running fake server. */
export interface FakeProvider {
  /** `http://127.0.0.1:<port>` — append the provider's prefix (e.g. `/v1`) as the SDK expects. */
  readonly origin: string
  readonly received: Array<Received>
  readonly close: () => Promise<void>
}

const INPUT_TOKENS = 42
const OUTPUT_TOKENS = 7

/** Splits a string in two non-empty halves (when it has 2+ characters), to stream it in pieces. */
const halves = (s: string): Array<string> =>
  s.length < 2 ? [s] : [s.slice(0, Math.floor(s.length / 2)), s.slice(Math.floor(s.length / 2))]

const sse = (res: ServerResponse, frames: ReadonlyArray<{ event?: string; data: unknown }>) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  for (const f of frames) {
    const data = typeof f.data === "string" ? f.data : JSON.stringify(f.data)
    res.write(`${f.event === undefined ? "" : `event: ${f.event}\n`}data: ${data}\n\n`)
  }
  res.end()
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

/** The tool calls a step makes (none for a text step). */
const callsOf = (step: Reply): ReadonlyArray<Call> =>
  "call" in step ? [step.call] : "calls" in step ? step.calls : []

/** The id of a reply's `i`-th call: `<prefix>_<reply number>`, suffixed `_<i>` after the first. */
const callId = (prefix: string, n: number, i: number) => (i === 0 ? `${prefix}_${n}` : `${prefix}_${n}_${i}`)

// --- OpenAI chat completions -----------------------------------------------------------------

const openai = (res: ServerResponse, body: Json, step: Reply, n: number) => {
  const id = `chatcmpl-${n}`
  const model = body.model
  const calls = callsOf(step)
  const text = "text" in step ? step.text : null
  const finish = calls.length > 0 ? "tool_calls" : "stop"
  const usage = {
    prompt_tokens: INPUT_TOKENS,
    completion_tokens: OUTPUT_TOKENS,
    total_tokens: INPUT_TOKENS + OUTPUT_TOKENS
  }
  if (body.stream !== true) {
    const message = {
      role: "assistant",
      content: text,
      ...(calls.length === 0
        ? {}
        : {
            tool_calls: calls.map((c, i) => ({
              id: callId("call", n, i),
              type: "function",
              function: { name: c.name, arguments: JSON.stringify(c.args) }
            }))
          })
    }
    return json(res, 200, {
      id,
      object: "chat.completion",
      created: 1,
      model,
      choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
      usage
    })
  }
  const chunk = (delta: unknown, finishReason: string | null = null) => ({
    data: {
      id,
      object: "chat.completion.chunk",
      created: 1,
      model,
      choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }]
    }
  })
  const frames: Array<{ data: unknown }> = [chunk({ role: "assistant", content: "" })]
  calls.forEach((c, index) => {
    frames.push(
      chunk({
        tool_calls: [
          { index, id: callId("call", n, index), type: "function", function: { name: c.name, arguments: "" } }
        ]
      })
    )
    for (const part of halves(JSON.stringify(c.args)))
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }))
  })
  if (text !== null) for (const part of halves(text)) frames.push(chunk({ content: part }))
  frames.push(chunk({}, finish))
  if (body.stream_options?.include_usage === true)
    frames.push({ data: { id, object: "chat.completion.chunk", created: 1, model, choices: [], usage } })
  frames.push({ data: "[DONE]" })
  return sse(res, frames)
}

// --- Anthropic messages ----------------------------------------------------------------------

const anthropic = (res: ServerResponse, body: Json, step: Reply, n: number) => {
  const id = `msg_${n}`
  const model = body.model
  const calls = callsOf(step)
  const blocks =
    "text" in step
      ? [{ type: "text", text: step.text }]
      : calls.map((c, i) => ({ type: "tool_use", id: callId("toolu", n, i), name: c.name, input: c.args }))
  const stop = calls.length > 0 ? "tool_use" : "end_turn"
  if (body.stream !== true) {
    return json(res, 200, {
      id,
      type: "message",
      role: "assistant",
      model,
      content: blocks,
      stop_reason: stop,
      stop_sequence: null,
      usage: { input_tokens: INPUT_TOKENS, output_tokens: OUTPUT_TOKENS }
    })
  }
  const frames: Array<{ event: string; data: unknown }> = [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          id,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: INPUT_TOKENS, output_tokens: 1 }
        }
      }
    }
  ]
  blocks.forEach((block, index) => {
    const isText = block.type === "text"
    frames.push({
      event: "content_block_start",
      data: {
        type: "content_block_start",
        index,
        content_block: isText ? { type: "text", text: "" } : { ...block, input: {} }
      }
    })
    const whole = "text" in block ? block.text : JSON.stringify(block.input)
    for (const part of halves(whole)) {
      frames.push({
        event: "content_block_delta",
        data: {
          type: "content_block_delta",
          index,
          delta: isText
            ? { type: "text_delta", text: part }
            : { type: "input_json_delta", partial_json: part }
        }
      })
    }
    frames.push({ event: "content_block_stop", data: { type: "content_block_stop", index } })
  })
  frames.push(
    {
      event: "message_delta",
      data: {
        type: "message_delta",
        delta: { stop_reason: stop, stop_sequence: null },
        usage: { output_tokens: OUTPUT_TOKENS }
      }
    },
    { event: "message_stop", data: { type: "message_stop" } }
  )
  return sse(res, frames)
}

// --- Ollama chat -----------------------------------------------------------------------------

const ollama = (res: ServerResponse, body: Json, step: Reply) => {
  const base = { model: body.model, created_at: "2025-01-01T00:00:00Z" }
  const calls = callsOf(step)
  const message =
    "text" in step
      ? { role: "assistant", content: step.text }
      : {
          role: "assistant",
          content: "",
          tool_calls: calls.map((c) => ({ function: { name: c.name, arguments: c.args } }))
        }
  const done = {
    ...base,
    done: true,
    done_reason: "stop",
    total_duration: 1,
    prompt_eval_count: INPUT_TOKENS,
    eval_count: OUTPUT_TOKENS
  }
  if (body.stream === false) return json(res, 200, { ...done, message })
  res.writeHead(200, { "content-type": "application/x-ndjson" })
  // Ollama sends tool calls whole, in one chunk; text arrives token by token.
  const pieces =
    "text" in step ? halves(step.text).map((content) => ({ role: "assistant", content })) : [message]
  for (const m of pieces) res.write(`${JSON.stringify({ ...base, message: m, done: false })}\n`)
  res.end(`${JSON.stringify({ ...done, message: { role: "assistant", content: "" } })}\n`)
}

/** An HTTP error as each provider shapes its body. */
const failure = (res: ServerResponse, wire: Wire, status: number) => {
  const message = `fake ${wire}: status ${status}`
  if (wire === "openai") return json(res, status, { error: { message, type: "fake", code: null } })
  if (wire === "anthropic") return json(res, status, { type: "error", error: { type: "fake", message } })
  return json(res, status, { error: message })
}

/** The path each wire's chat endpoint is served at (OpenAI's under `prefix`, default `/v1`). */
const endpoint = (wire: Wire, prefix: string): string =>
  wire === "openai" ? `${prefix}/chat/completions` : wire === "anthropic" ? "/v1/messages" : "/api/chat"

/**
 * Starts a fake `wire` server replaying `script`, one step per chat request, in order. `prefix`
 * is where an OpenAI-style server mounts its API (a custom base URL's path).
 */
export const startFake = async (
  wire: Wire,
  script: ReadonlyArray<Step>,
  options: { readonly prefix?: string } = {}
): Promise<FakeProvider> => {
  const received: Array<Received> = []
  const path = endpoint(wire, options.prefix ?? "/v1")
  let next = 0
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8")
      let body: unknown
      try {
        body = raw === "" ? undefined : JSON.parse(raw)
      } catch {
        return json(res, 400, { error: { message: `fake ${wire}: body is not JSON`, type: "fake" } })
      }
      received.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body })
      if (req.method !== "POST" || req.url !== path) {
        return json(res, 400, {
          error: { message: `fake ${wire}: unexpected ${req.method} ${req.url}`, type: "fake" }
        })
      }
      const step = script[next]
      if (step === undefined) {
        return json(res, 400, { error: { message: `fake ${wire}: script exhausted`, type: "fake" } })
      }
      next += 1
      if ("fail" in step) return failure(res, wire, step.fail)
      if (wire === "openai") return openai(res, body, step, next)
      if (wire === "anthropic") return anthropic(res, body, step, next)
      return ollama(res, body, step)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

// --- Reading what the fakes received, per wire -------------------------------------------------

/** Names of the tools bound on a request, in the order sent. */
export const toolNames = (wire: Wire, body: Json): Array<string> =>
  (body.tools ?? []).map((t: Json) => (wire === "anthropic" ? t.name : t.function.name))

/** The tool results a request carried back, as `{ id, content }` (Ollama's carry no id). */
export const toolResults = (wire: Wire, body: Json): Array<{ id?: string; content: string }> => {
  const messages: Array<Json> = body.messages ?? []
  if (wire === "anthropic") {
    return messages.flatMap((m) =>
      Array.isArray(m.content)
        ? m.content
            .filter((b: Json) => b.type === "tool_result")
            .map((b: Json) => ({
              id: b.tool_use_id,
              content: typeof b.content === "string" ? b.content : b.content.map((c: Json) => c.text).join("")
            }))
        : []
    )
  }
  return messages
    .filter((m) => m.role === "tool")
    .map((m) => (wire === "openai" ? { id: m.tool_call_id, content: m.content } : { content: m.content }))
}

/** The tool calls the request's history says the assistant made, as `{ id, name, args }`. */
export const assistantCalls = (
  wire: Wire,
  body: Json
): Array<{ id?: string; name: string; args: unknown }> => {
  const assistant: Array<Json> = (body.messages ?? []).filter((m: Json) => m.role === "assistant")
  if (wire === "anthropic") {
    return assistant.flatMap((m) =>
      Array.isArray(m.content)
        ? m.content
            .filter((b: Json) => b.type === "tool_use")
            .map((b: Json) => ({ id: b.id, name: b.name, args: b.input }))
        : []
    )
  }
  return assistant.flatMap((m) =>
    (m.tool_calls ?? []).map((c: Json) => ({
      ...(wire === "openai" ? { id: c.id } : {}),
      name: c.function.name,
      args: wire === "openai" ? JSON.parse(c.function.arguments) : c.function.arguments
    }))
  )
}

/** The system prompt a request carried, as text. */
export const systemText = (wire: Wire, body: Json): string => {
  if (wire === "anthropic") {
    return typeof body.system === "string"
      ? body.system
      : (body.system ?? []).map((b: Json) => b.text).join("")
  }
  return (body.messages ?? [])
    .filter((m: Json) => m.role === "system")
    .map((m: Json) => m.content)
    .join("")
}
