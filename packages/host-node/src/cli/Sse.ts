/**
 * The client side of the SSE contract, for `plugboard chat` and the tests: frames parsed with
 * core's `EventSink.fromSse` (comments such as `: heartbeat` skipped), and a readable rendering.
 */
import { EventSink } from "@plugboard/core"
import { Effect, Either } from "effect"

/** Yields each event of an SSE body as it arrives; a frame that does not parse is an `error` event. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<EventSink.AgentEvent> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    let end = buffer.indexOf("\n\n")
    while (end >= 0) {
      const frame = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      end = buffer.indexOf("\n\n")
      if (frame.trim() === "" || frame.startsWith(":")) continue
      const parsed = Effect.runSync(Effect.either(EventSink.fromSse(frame)))
      yield Either.isRight(parsed)
        ? parsed.right
        : { _tag: "error", error: `Unreadable SSE frame: ${frame.slice(0, 200)}` }
    }
  }
}

const short = (value: unknown, max: number): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value)
  return text.length > max ? `${text.slice(0, max)}…` : text
}

/** One event on its own (a `message` as a whole paragraph). Streams print through `eventPrinter`. */
export const printEvent = (event: EventSink.AgentEvent): string => {
  switch (event._tag) {
    case "reasoning":
      // A provider's reasoning can run to pages: one line, clipped, keeps the chat readable.
      return `… ${short(event.content.replace(/\s+/g, " ").trim(), 300)}\n`
    case "tool_call":
      return event.status === "isRunning"
        ? `→ ${event.toolName} ${short(event.args, 200)}\n`
        : `← ${event.toolName} ${short(event.output ?? "", 160)}\n`
    case "message":
      return `\n${event.content}\n\n`
    case "error":
      return `✗ ${event.error}\n`
    case "done":
      return event.status === undefined || event.status === "finished"
        ? "← done\n"
        : `← done (${event.status}${event.partialText === undefined ? "" : `, ${event.partialText.length} characters kept`})\n`
    case "run":
      // The run's id matters to a client that rejoins; a person reading the chat needs nothing.
      return ""
    case "waiting":
      // What a chat that cannot ask (no terminal) prints: how to answer (docs/waiting.md).
      return event.kind === "input"
        ? `⏸ ${event.tool} (${event.plugin}) asks: ${event.message ?? ""} — answer with POST /runs/${event.runId}/resume {"values": {…}} or {"decline": true}\n`
        : event.kind === "connect"
          ? `⏸ ${event.plugin} needs you to connect your account: open ${event.url ?? "(no link)"} — the conversation goes on once you do (GET /runs/${event.runId}/waits names the run that continues it)\n`
          : `⏸ ${event.tool} (${event.plugin}) waits for your approval: POST /runs/${event.runId}/resume\n`
  }
}

/**
 * A printer for one stream's events: `message` chunks run on as one paragraph (as the model
 * produces them), any other event on its own line.
 */
export const eventPrinter = (): ((event: EventSink.AgentEvent) => string) => {
  let inAnswer = false
  return (event) => {
    if (event._tag === "message") {
      const lead = inAnswer ? "" : "\n"
      inAnswer = true
      return lead + event.content
    }
    const close = inAnswer ? "\n\n" : ""
    inAnswer = false
    return close + printEvent(event)
  }
}
