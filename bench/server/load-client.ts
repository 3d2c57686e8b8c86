/**
 * Child process of `pnpm bench server`: the one load client every server is driven by. On
 * `setup` it mints one UCAN invocation per client (each client is its own user, as in the
 * previous in-process benchmark); on `round` it runs `level` concurrent clients against one
 * server for `ms`, each sending "What's the weather in Berlin?" to a fresh session per turn
 * (`POST /messages/<new id>`, SSE), or to one session for BENCH_TURNS_PER_SESSION turns in a row
 * (a conversation, per server and client), and reading the stream to its `done` frame. Latency
 * is request sent → `done` received. HTTP/1.1 over a keep-alive agent (`node:http`: lighter on
 * the client's CPU than `fetch`, which matters on a 2-core machine where the client shares the
 * cores with the server under test).
 */
import { Agent, request } from "node:http"
import { generateSigner, mintInvocation } from "@plugboard/ucan"
import { serve } from "./ipc.js"

const MESSAGE = "What's the weather in Berlin?"
/** A turn taking longer than this fails the round (the bench never hangs on one request). */
const TURN_TIMEOUT_MS = 30_000

export interface RoundResult {
  readonly turns: number
  readonly elapsedMs: number
  readonly latencies: ReadonlyArray<number>
  /** SSE events per turn (all of them, and `message` ones). */
  readonly eventsPerTurn: number
  readonly messageEventsPerTurn: number
  readonly bytesPerTurn: number
  /** CPU time of this (client) process over the round, ms. */
  readonly clientCpuMs: number
}

const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY })
let tokens: ReadonlyArray<string> = []
let sessionCounter = 0
/** Turns a session gets before the client moves to a new one (1: every turn on a fresh session). */
const TURNS_PER_SESSION = Math.max(1, Number(process.env.BENCH_TURNS_PER_SESSION ?? 1))
/** Each server's and client's current session, and the turns it has had. */
const conversations = new Map<string, { id: string; turns: number }>()
const sessionFor = (base: URL, client: number): string => {
  const key = `${base.href} ${client}`
  let current = conversations.get(key)
  if (current === undefined || current.turns >= TURNS_PER_SESSION) {
    current = { id: `bench-${process.pid}-${++sessionCounter}`, turns: 0 }
    conversations.set(key, current)
  }
  current.turns++
  return current.id
}

interface Turn {
  readonly ms: number
  readonly events: number
  readonly messages: number
  readonly bytes: number
}

/** One streamed turn; rejects on anything but a 200 stream ending in `done` with the answer. */
const turn = (base: URL, client: number, headers: Record<string, string>): Promise<Turn> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const body = JSON.stringify({ message: MESSAGE, stream: true })
    const req = request(
      new URL(`/messages/${sessionFor(base, client)}`, base),
      {
        method: "POST",
        agent,
        headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) }
      },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          text += chunk
        })
        res.on("error", reject)
        res.on("end", () => {
          const ms = performance.now() - started
          const events = text.split("\nevent: ").length - 1 + (text.startsWith("event: ") ? 1 : 0)
          const messages = text.split("event: message\n").length - 1
          if (
            res.statusCode !== 200 ||
            !/event: done\n/.test(text) ||
            text.includes("event: error") ||
            messages === 0 ||
            !text.includes("Berlin")
          ) {
            reject(new Error(`turn failed at ${base.href}: ${res.statusCode} ${text.slice(0, 400)}`))
            return
          }
          resolve({ ms, events, messages, bytes: text.length })
        })
      }
    )
    req.setTimeout(TURN_TIMEOUT_MS, () =>
      req.destroy(new Error(`turn at ${base.href} took over ${TURN_TIMEOUT_MS} ms`))
    )
    req.on("error", reject)
    req.end(body)
  })

const round = async (
  url: string,
  auth: boolean,
  level: number,
  ms: number,
  warmup: number
): Promise<RoundResult> => {
  const base = new URL(url)
  const headersOf = (i: number): Record<string, string> =>
    auth ? { authorization: `Bearer ${tokens[i]}`, "x-auth-type": "ucan" } : {}
  // Untimed turns first: connections open, the server's caches and JIT warm after the other side's round.
  await Promise.all(
    Array.from({ length: level }, async (_, i) => {
      for (let k = 0; k < warmup; k++) await turn(base, i, headersOf(i))
    })
  )
  const latencies: Array<number> = []
  let events = 0
  let messages = 0
  let bytes = 0
  const cpu = process.cpuUsage()
  const started = performance.now()
  const deadline = started + ms
  await Promise.all(
    Array.from({ length: level }, async (_, i) => {
      const headers = headersOf(i)
      while (performance.now() < deadline) {
        const t = await turn(base, i, headers)
        latencies.push(t.ms)
        events += t.events
        messages += t.messages
        bytes += t.bytes
      }
    })
  )
  const elapsedMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  const n = Math.max(1, latencies.length)
  return {
    turns: latencies.length,
    elapsedMs,
    latencies,
    eventsPerTurn: events / n,
    messageEventsPerTurn: messages / n,
    bytesPerTurn: bytes / n,
    clientCpuMs: (used.user + used.system) / 1000
  }
}

serve(async (message) => {
  switch (message.type) {
    case "setup": {
      const audience = message.oracleDid as string
      tokens = await Promise.all(
        Array.from({ length: message.clients as number }, async () =>
          mintInvocation({ issuer: await generateSigner(), audience, ttlSeconds: 900 })
        )
      )
      return {}
    }
    case "round":
      return round(
        message.url as string,
        message.auth as boolean,
        message.level as number,
        message.ms as number,
        message.warmup as number
      )
    default:
      throw new Error(`unknown message ${message.type}`)
  }
})
process.send?.({ type: "ready" })
