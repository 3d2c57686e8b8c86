/**
 * Local servers (127.0.0.1, random port) that speak a provider's streaming wire (OpenAI chat
 * completions SSE, Anthropic messages SSE) and then misbehave as a sick endpoint does: accept the
 * request and never answer, answer the headers and the message's opening and stall before the
 * first token, stall after one token, or drip tokens slowly but steadily. Each records when a
 * request's connection closed, so a test sees that a tripped bound cancelled the HTTP request.
 */
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** The wires these servers speak. */
export type StallWire = "openai" | "anthropic"

/** What the server does with every request. */
export type Behaviour =
  | { readonly kind: "no-headers" }
  | { readonly kind: "no-token" }
  | { readonly kind: "one-token"; readonly text: string }
  | { readonly kind: "drip"; readonly tokens: ReadonlyArray<string>; readonly everyMs: number }

/** A running stalling server. */
export interface StallingServer {
  /** The base URL to give the SDK (`…/v1` for OpenAI, the origin for Anthropic). */
  readonly baseUrl: string
  /** How many requests arrived, and how many of their connections have closed since. */
  readonly requests: () => number
  readonly closed: () => number
  /** The parsed bodies of the requests, in order. */
  // biome-ignore lint/suspicious/noExplicitAny: provider JSON of any shape
  readonly bodies: Array<any>
  readonly close: () => Promise<void>
}

const openaiFrames = {
  start: () => [
    {
      id: "c1",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]
    }
  ],
  token: (text: string) => [
    {
      id: "c1",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta: { content: text }, finish_reason: null }]
    }
  ],
  end: () => [
    {
      id: "c1",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta: {}, finish_reason: "stop" }]
    },
    "[DONE]"
  ]
}

const anthropicFrames = {
  start: () => [
    {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "m",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 5, output_tokens: 1 }
      }
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }
  ],
  token: (text: string) => [{ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }],
  end: () => [
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 3 }
    },
    { type: "message_stop" }
  ]
}

const write = (res: ServerResponse, wire: StallWire, frames: ReadonlyArray<unknown>) => {
  for (const frame of frames) {
    if (typeof frame === "string") res.write(`data: ${frame}\n\n`)
    else if (wire === "anthropic")
      res.write(`event: ${(frame as { type: string }).type}\ndata: ${JSON.stringify(frame)}\n\n`)
    else res.write(`data: ${JSON.stringify(frame)}\n\n`)
  }
}

/** Starts a server that answers every request with `behaviour` on `wire`. */
export const startStalling = async (wire: StallWire, behaviour: Behaviour): Promise<StallingServer> => {
  let requests = 0
  let closed = 0
  const frames = wire === "openai" ? openaiFrames : anthropicFrames
  const bodies: Array<unknown> = []
  const timers = new Set<ReturnType<typeof setTimeout>>()
  const server = createServer((req, res) => {
    requests++
    res.on("close", () => {
      closed++
    })
    let raw = ""
    req.on("data", (d) => {
      raw += d.toString()
    })
    req.on("end", () => {
      bodies.push(JSON.parse(raw))
      if (behaviour.kind === "no-headers") return
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      write(res, wire, frames.start())
      if (behaviour.kind === "no-token") return
      if (behaviour.kind === "one-token") return write(res, wire, frames.token(behaviour.text))
      const tokens = [...behaviour.tokens]
      const tick = () => {
        const token = tokens.shift()
        if (token === undefined) {
          write(res, wire, frames.end())
          return res.end()
        }
        write(res, wire, frames.token(token))
        const timer = setTimeout(tick, behaviour.everyMs)
        timers.add(timer)
      }
      tick()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    baseUrl: wire === "openai" ? `${origin}/v1` : origin,
    requests: () => requests,
    closed: () => closed,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer)
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** A base URL on which nothing listens: a port that was just free. */
export const refusingBaseUrl = async (wire: StallWire): Promise<string> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return wire === "openai" ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`
}
