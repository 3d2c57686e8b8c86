/**
 * The Socket.IO gateway, on the same HTTP server as the routes (path `/socket.io`).
 *
 * Handshake: `auth.invocation` (a UCAN invocation, as the `Authorization: Bearer` header) or
 * `auth.ucanDelegation` (as `x-ucan-delegation`), and `query.sessionId`. The credentials are
 * verified by the same Auth port and stage as HTTP; a handshake then takes one slot of the user's
 * rate limit, like a request (so reconnect loops and socket floods are throttled with the HTTP
 * traffic of the same user, `data.retryAfter` in seconds); then the user's Matrix restore runs
 * when the host replicates state, and the session must exist in that user's SessionStore;
 * otherwise the connection is refused (`connect_error` whose message says why,
 * `data: { status, error }`).
 *
 * A socket joins the room of its session (`LiveHub`) and gets `connected`; then every event the
 * session's turns publish. Client events: `ping` → `pong`; `tool_result` / `action_call_result`
 * answer a client-side tool call of the socket's own session (acknowledged `{ accepted }`).
 */
import type { Server as HttpServer } from "node:http"
import { type Auth, describe, type RateLimiter, type RuntimeLogger, SessionStore } from "@plugboard/core"
import { Data, Effect, Either } from "effect"
import { Server, type Socket } from "socket.io"
import type { HttpFailure } from "../Http.js"
import { authenticate, rateLimit } from "../Pipeline.js"
import { type LiveHub, roomOf, type SessionKey } from "./LiveHub.js"

/** What the gateway checks connections against. */
export interface GatewayOptions {
  readonly server: HttpServer
  readonly hub: LiveHub
  readonly auth: Auth.AuthService
  readonly sessions: SessionStore.SessionStoreService
  /** The per-user limiter of the HTTP pipeline; each handshake takes one slot. */
  readonly limiter: RateLimiter.RateLimiterService
  /** `Access-Control-Allow-Origin` of the HTTP routes, applied to the polling transport too. */
  readonly corsOrigin: string
  readonly logger: RuntimeLogger
  /** The user's Matrix restore, as HTTP requests run it before routing. */
  readonly prepareUser?: ((did: string) => Promise<void>) | undefined
}

/** A refused handshake: Socket.IO hands `message` and `data` to the client's `connect_error`. */
class Refused extends Data.TaggedError("Refused")<{
  readonly message: string
  readonly data: { readonly status: number; readonly error: string; readonly retryAfter?: number }
}> {
  constructor(message: string, data: Refused["data"]) {
    super({ message, data })
  }
}

const str = (value: unknown): string | undefined =>
  typeof value === "string" && value.trim().length > 0 ? value.trim() : undefined

/** The handshake's credentials in the shape the Auth port reads from HTTP headers. */
export const handshakeCredentials = (
  auth: Readonly<Record<string, unknown>>
): Auth.Credentials | undefined => {
  const invocation = str(auth.invocation)
  const delegation = str(auth.ucanDelegation)
  if (invocation === undefined && delegation === undefined) return undefined
  return {
    ...(invocation === undefined
      ? {}
      : {
          authorization: invocation.startsWith("Bearer ") ? invocation : `Bearer ${invocation}`,
          authType: "ucan"
        }),
    ...(delegation === undefined ? {} : { ucanDelegation: delegation })
  }
}

/** Who may connect, or why not (`Refused`): the HTTP pipeline's stages, then the session. */
const admit = (options: GatewayOptions, socket: Socket): Effect.Effect<SessionKey, Refused> =>
  Effect.gen(function* () {
    const credentials = handshakeCredentials((socket.handshake.auth ?? {}) as Record<string, unknown>)
    if (credentials === undefined)
      return yield* new Refused(
        "Missing credentials: send auth.invocation or auth.ucanDelegation in the handshake.",
        {
          status: 401,
          error: "missing"
        }
      )
    const { did } = yield* Effect.mapError(
      authenticate(options.auth, credentials),
      (failure: HttpFailure) =>
        new Refused(failure.message, { status: failure.status, error: failure.error ?? "unauthorized" })
    )
    yield* Effect.mapError(rateLimit(options.limiter, did), (failure: HttpFailure) => {
      const retryAfter = Number(failure.headers?.["retry-after"])
      return new Refused(failure.message, {
        status: failure.status,
        error: failure.error ?? "rate-limited",
        ...(Number.isFinite(retryAfter) ? { retryAfter } : {})
      })
    })
    const sessionId = yield* Effect.mapError(
      SessionStore.validateSessionId(socket.handshake.query.sessionId),
      (e) => new Refused(`query.sessionId: ${e.message}`, { status: 400, error: "invalid-input" })
    )
    const prepareUser = options.prepareUser
    if (prepareUser !== undefined) yield* Effect.promise(() => prepareUser(did))
    const found = yield* Effect.mapError(options.sessions.get(did, sessionId), (e) => {
      options.logger.warn("socket handshake: sessions could not be read", { error: e.message })
      return new Refused(
        "Sessions could not be read: session storage is unavailable right now. Try again shortly.",
        {
          status: 503,
          error: "storage-unavailable"
        }
      )
    })
    if (found === undefined)
      return yield* new Refused(`Session '${sessionId.slice(0, 200)}' not found for this user.`, {
        status: 404,
        error: "session-not-found"
      })
    return { did, sessionId }
  })

/** Attaches the gateway to a listening server; returns the Socket.IO server (close it before the HTTP server). */
export const attachGateway = (options: GatewayOptions): Server => {
  const io = new Server(options.server, {
    cors: {
      origin: options.corsOrigin === "*" ? "*" : options.corsOrigin,
      credentials: options.corsOrigin !== "*"
    },
    // The HTTP routes own every other path; answers to unknown Socket.IO paths stay Socket.IO's.
    serveClient: false
  })
  io.use((socket, next) => {
    // The one Effect boundary of the gateway: Socket.IO's middleware takes a callback.
    Effect.runPromise(Effect.either(admit(options, socket))).then(
      (admitted) => {
        if (Either.isRight(admitted)) {
          socket.data = admitted.right
          next()
          return
        }
        const refused = new Error(admitted.left.message) as Error & { data?: unknown }
        refused.data = admitted.left.data
        next(refused)
      },
      (error: unknown) => {
        options.logger.error("socket handshake failed", {
          error: describe(error)
        })
        const failed = new Error("The connection could not be checked.") as Error & { data?: unknown }
        failed.data = { status: 500, error: "internal" }
        next(failed)
      }
    )
  })
  io.on("connection", (socket) => {
    const key = socket.data as SessionKey
    void socket.join(roomOf(key))
    socket.emit("connected", { sessionId: key.sessionId, did: key.did, socketId: socket.id })
    socket.on("ping", (_payload: unknown, ack?: unknown) => {
      const pong = { sessionId: key.sessionId, timestamp: new Date().toISOString() }
      socket.emit("pong", pong)
      if (typeof ack === "function") ack(pong)
    })
    const onAnswer = (kind: "browser" | "action") => (answer: unknown, ack?: unknown) => {
      const accepted = options.hub.answer(key, kind, answer)
      if (typeof ack === "function") ack({ accepted })
    }
    socket.on("tool_result", onAnswer("browser"))
    socket.on("action_call_result", onAnswer("action"))
  })
  return io
}
