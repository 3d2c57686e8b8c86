/**
 * The `TurnControl` port over Redis pub/sub (docs/deployment.md): `POST /messages/abort`
 * and `DELETE /sessions/:id` on one host stop the session's turn running on another.
 *
 * Every serving process subscribes to one request channel; a stop publishes its request there,
 * and `PUBLISH` answers how many processes received it. Each answers on the sender's own reply
 * channel (after stopping its turns, within the request's wait), and the sender combines the
 * answers it got: a process that has not answered `waitMs` + `ANSWER_GRACE_MS` after the request
 * counts as one whose turn has not ended. Pub/sub keeps nothing: a process that subscribes later
 * has no turn the request was about.
 */
import { randomBytes } from "node:crypto"
import { describe, TurnControl } from "@plugboard/core"
import { Effect, Layer, type Scope } from "effect"
import type { Redis } from "ioredis"
import { RedisConnection, type RedisConnectionService } from "./RedisConnection.js"

interface Pending {
  readonly answers: Array<TurnControl.StopResult>
  expected: number
  readonly done: () => void
}

/** What travels on the request channel. */
interface Wire extends TurnControl.StopRequest {
  readonly id: string
  readonly replyTo: string
}

const isWire = (v: unknown): v is Wire => {
  const w = v as Partial<Wire> | null
  return (
    typeof w === "object" &&
    w !== null &&
    typeof w.id === "string" &&
    typeof w.replyTo === "string" &&
    typeof w.did === "string" &&
    typeof w.sessionId === "string" &&
    (w.reason === "user" || w.reason === "deleted") &&
    Number.isSafeInteger(w.waitMs)
  )
}

const parse = (message: string): unknown => {
  try {
    return JSON.parse(message)
  } catch {
    return undefined
  }
}

const unavailable = (message: string) =>
  new TurnControl.TurnControlError({ reason: "unavailable", message: `turn control unavailable: ${message}` })

/** Builds the control on a connection; its subscriber connection closes with the scope. */
export const makeTurnControl = (
  redis: RedisConnectionService
): Effect.Effect<TurnControl.TurnControlService, TurnControl.TurnControlError, Scope.Scope> =>
  Effect.gen(function* () {
    const requests = `${redis.prefix}turn-control`
    const replies = `${redis.prefix}turn-control:reply:${randomBytes(8).toString("hex")}`
    const handlers = new Set<TurnControl.StopHandler>()
    const pending = new Map<string, Pending>()

    const answer = async (request: Wire) => {
      const { id, replyTo, ...asked } = request
      const results = await Promise.all(
        [...handlers].map((h) => h(asked).catch(() => ({ found: false, ended: false })))
      )
      const combined = TurnControl.combine(results)
      await redis.client
        .publish(replyTo, JSON.stringify({ id, found: combined.found, ended: combined.ended }))
        .catch(() => undefined)
    }

    const subscriber: Redis = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const client = redis.duplicate()
        client.on("message", (channel: string, message: string) => {
          const body = parse(message)
          if (channel === requests) {
            if (isWire(body)) void answer(body)
            return
          }
          const reply = body as { id?: unknown; found?: unknown; ended?: unknown } | undefined
          const waiting = typeof reply?.id === "string" ? pending.get(reply.id) : undefined
          if (waiting === undefined) return
          waiting.answers.push({ found: reply!.found === true, ended: reply!.ended === true })
          if (waiting.answers.length >= waiting.expected) waiting.done()
        })
        client.on("error", () => undefined)
        return client
      }),
      (client) => Effect.sync(() => client.disconnect())
    )
    yield* Effect.tryPromise({
      try: () => subscriber.subscribe(replies),
      catch: (error) => unavailable(String(error))
    })

    const serve = (handler: TurnControl.StopHandler) =>
      Effect.acquireRelease(
        Effect.tryPromise({
          try: async () => {
            handlers.add(handler)
            if (handlers.size === 1) await subscriber.subscribe(requests)
          },
          catch: (error) => {
            handlers.delete(handler)
            return unavailable(String(error))
          }
        }),
        () =>
          Effect.promise(async () => {
            handlers.delete(handler)
            if (handlers.size === 0) await subscriber.unsubscribe(requests).catch(() => undefined)
          })
      )

    const stop = (request: TurnControl.StopRequest) =>
      Effect.flatMap(TurnControl.validateRequest(request), (checked) =>
        Effect.async<TurnControl.StopResult, TurnControl.TurnControlError>((resume) => {
          const id = randomBytes(12).toString("hex")
          let timer: ReturnType<typeof setTimeout> | undefined
          const entry: Pending = {
            answers: [],
            expected: Number.POSITIVE_INFINITY,
            done: () => {
              clearTimeout(timer)
              pending.delete(id)
              resume(
                Effect.succeed(TurnControl.combine(entry.answers, entry.answers.length >= entry.expected))
              )
            }
          }
          pending.set(id, entry)
          const wire: Wire = { ...checked, id, replyTo: replies }
          redis.client.publish(requests, JSON.stringify(wire)).then(
            (receivers) => {
              if (!pending.has(id)) return
              entry.expected = receivers
              if (entry.answers.length >= receivers) return entry.done()
              timer = setTimeout(entry.done, checked.waitMs + TurnControl.ANSWER_GRACE_MS)
            },
            (error: unknown) => {
              pending.delete(id)
              resume(Effect.fail(unavailable(describe(error))))
            }
          )
          return Effect.sync(() => {
            clearTimeout(timer)
            pending.delete(id)
          })
        })
      )

    return { serve, stop }
  })

/** The turn control on the `RedisConnection`. */
export const layerTurnControl: Layer.Layer<
  TurnControl.TurnControl,
  TurnControl.TurnControlError,
  RedisConnection
> = Layer.scoped(TurnControl.TurnControl, Effect.flatMap(RedisConnection, makeTurnControl))
