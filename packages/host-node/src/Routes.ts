/**
 * The routes of the wire contract (docs/spec/wire.md#routes), as `HttpRouter` routes over the
 * services the app booted: health and models (public), sessions and messages (behind the pipeline).
 * Handlers only translate between HTTP and the ports; the messages routes and their SSE writer live
 * in `Messages.ts`.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { BaseMessage } from "@langchain/core/messages"
import { type Access, HistoryPage, LoadedPlugins, type RunStore, SessionStore } from "@plugboard/core"
import { messagesAt, pageAt, textOf } from "@plugboard/langgraph"
import { Context, Effect, Either, Schema } from "effect"
import type { TurnCredits } from "./credits/TurnCredits.js"
import { decodeBody, HttpFailure, json, readJson, searchParams, unavailable } from "./Http.js"
import type { StageTimings } from "./Pipeline.js"
import {
  mintSessionId,
  notFound,
  ownerOf,
  type SaverFor,
  sessionFailure,
  threadOfOther
} from "./SessionAccess.js"
import type { TurnService } from "./TurnService.js"

/** The authenticated caller of a request behind the pipeline. */
export class RequestUser extends Context.Tag("@plugboard/host-node/RequestUser")<
  RequestUser,
  {
    readonly did: string
    /** What the user's credentials grant (`Auth.Verified.capabilities`), carried to the turn. */
    readonly capabilities?: ReadonlyArray<Access.Capability> | undefined
    readonly timings: StageTimings
    /** Reports the timings of a streamed request once its turn is over (its response left long before). */
    readonly streamEnded: () => void
    /** The credits reserved for this request's turn (a turn route, credits on); its turn settles them. */
    readonly credits?: TurnCredits | undefined
  }
>() {}

/** What the session and message routes use. */
export interface RouteServices {
  readonly sessions: SessionStore.SessionStoreService
  /** The runs: a deleted session's runs go with it (docs/spec/wire.md#deleting-a-session). */
  readonly runs: Pick<RunStore.RunStoreService, "deleteSession">
  /** The user's saver (the `Checkpointer` port). */
  readonly saverFor: SaverFor
  readonly oracleDid: string
  readonly oracleName: string
  readonly maxBodyBytes: number
  readonly logger: { readonly warn: (message: string, fields?: Record<string, unknown>) => void }
  /** The running turns: a deleted session's turn is stopped first, another user's claim respected. */
  readonly turns: Pick<TurnService, "stop" | "heldByOther">
  /** How long `DELETE /sessions/:id` waits for the session's aborted turn to end (default 5 s). */
  readonly stopTurnMs?: number | undefined
}

/** How long a delete waits for the session's aborted turn to end, unless told otherwise. */
export const STOP_TURN_MS = 5_000

/** The `:sessionId` (or `:id`) path parameter, checked by the port's rule. */
export const sessionIdParam = Effect.flatMap(HttpRouter.params, (params) =>
  SessionStore.validateSessionId(params.sessionId ?? params.id).pipe(Effect.mapError(sessionFailure))
)

const wireSession = (s: SessionStore.Session) => ({
  sessionId: s.sessionId,
  title: s.title,
  createdAt: s.createdAt,
  lastUpdatedAt: s.lastUpdatedAt,
  oracleName: s.oracleName,
  oracleDid: s.oracleDid
})

const CreateSession = Schema.Struct({
  title: Schema.optional(Schema.String.pipe(Schema.maxLength(SessionStore.MAX_TITLE_LENGTH)))
})

const pageParam = (name: string) =>
  Effect.flatMap(searchParams, (params) => {
    const raw = params.get(name)
    if (raw === null || raw === "") return Effect.succeed(undefined)
    return /^\d{1,9}$/.test(raw)
      ? Effect.succeed(Number(raw))
      : Effect.fail(new HttpFailure({ status: 400, message: `${name} must be a non-negative whole number.` }))
  })

/** A user message's attachments and metadata, as the client sent them. */
const extrasShown = (m: BaseMessage): Record<string, unknown> => {
  const kept = (m.additional_kwargs as { plugboard?: Record<string, unknown> } | undefined)?.plugboard
  if (kept === undefined || m.getType() !== "human") return {}
  return {
    ...(Array.isArray(kept.attachments) ? { attachments: kept.attachments } : {}),
    ...(kept.metadata !== undefined ? { metadata: kept.metadata } : {})
  }
}

/** One stored message as `GET /messages/:sessionId` shows it. */
export const wireMessage = (m: BaseMessage) => {
  const type = m.getType()
  const calls = (m as { tool_calls?: ReadonlyArray<{ id?: string; name: string; args: unknown }> }).tool_calls
  const toolCallId = (m as { tool_call_id?: string }).tool_call_id
  return {
    type,
    content: textOf(m),
    id: m.id,
    ...(m.name === undefined ? {} : { name: m.name }),
    ...(calls !== undefined && calls.length > 0
      ? { toolCalls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args })) }
      : {}),
    ...(toolCallId === undefined ? {} : { toolCallId }),
    // A tool answer the model got as an error (a failed, refused or cut-off call), as the live
    // `tool_call` `done` event said (`isError`), so a reloaded history shows it failed.
    ...(type === "tool" && (m as { status?: string }).status === "error" ? { isError: true } : {}),
    // What the client sent with its message (Messages.ts `extrasOf`): its attachments and metadata.
    ...extrasShown(m),
    // An answer a cut-off turn kept, as far as it was streamed (Turns.ts): clients can say so.
    ...((m.response_metadata as { plugboard?: { cutOff?: unknown } } | undefined)?.plugboard?.cutOff === true
      ? { cutOff: true }
      : {})
  }
}

/** The user's saver, or the 503 of a checkpointer that cannot be reached. */
const saverOf = (s: Pick<RouteServices, "saverFor">, did: string) =>
  Effect.mapError(
    s.saverFor(did),
    (e) =>
      new HttpFailure({
        status: 503,
        message: `load checkpointer: ${e.message}`,
        error: "storage-unavailable"
      })
  )

const tryPromise = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (error) => unavailable(what, "the user's storage", "storage-unavailable", error)
  })

/** The session routes and the history route. */
export const sessionRoutes = (s: RouteServices) => {
  const sessionsApi = s.sessions
  const create = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const body = yield* decodeBody(CreateSession, (yield* readJson(s.maxBodyBytes)) ?? {})
    const session = yield* sessionsApi
      .create(did, {
        sessionId: mintSessionId(),
        title: body.title,
        oracleName: s.oracleName,
        oracleDid: s.oracleDid
      })
      .pipe(Effect.mapError(sessionFailure))
    return json(wireSession(session), 201)
  })

  const list = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const limit = yield* pageParam("limit")
    const offset = yield* pageParam("offset")
    const page = yield* sessionsApi.list(did, { limit, offset }).pipe(Effect.mapError(sessionFailure))
    return json({ sessions: page.sessions.map(wireSession), total: page.total })
  })

  const remove = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const id = yield* sessionIdParam
    // The user's turn on the session saves when it ends: stopped first, or it would write the
    // deleted conversation back after the thread is gone.
    const stopped = yield* s.turns.stop(did, id, s.stopTurnMs ?? STOP_TURN_MS)
    if (!stopped) {
      return yield* Effect.fail(
        new HttpFailure({
          status: 503,
          message: "The session's running turn did not stop in time; nothing was deleted. Try again.",
          error: "turn-still-running",
          headers: { "retry-after": "1" }
        })
      )
    }
    // Under a saver shared by users, a thread another user wrote (or is writing: their turn holds
    // the id) is never deleted (SessionAccess).
    const others = yield* Effect.either(
      Effect.map(threadOfOther(s.saverFor, did, id), (other) => other || s.turns.heldByOther(did, id))
    )
    const existed = yield* sessionsApi.delete(did, id).pipe(Effect.mapError(sessionFailure))
    if (!existed) return yield* Effect.fail(notFound(id))
    // Its runs go too: a rejoin must not replay a deleted conversation. A failure is logged and
    // left for retention to prune (the session itself is gone), never a 500.
    yield* s.runs
      .deleteSession(did, id)
      .pipe(
        Effect.catchAll((e) => Effect.sync(() => s.logger.warn("runs not deleted", { id, error: e.message })))
      )
    if (others._tag === "Right" && others.right) {
      s.logger.warn("session deleted, thread kept: another user wrote it", { id })
      return json({ success: true, sessionId: id })
    }
    // The thread goes with its session; a failure leaves orphaned checkpoints, never a 500.
    yield* Effect.ignore(
      Effect.flatMap(saverOf(s, did), (saver) =>
        tryPromise("delete thread", () => saver.deleteThread(id))
      ).pipe(
        Effect.tapError((e) =>
          Effect.sync(() => s.logger.warn("thread not deleted", { id, error: e.message }))
        )
      )
    )
    return json({ success: true, sessionId: id })
  })

  // The session's thread, for both history routes and the console: a session of this user, a
  // thread of no one else. Its latest checkpoint only: each route reads what it shows of the
  // messages (stored as deltas, they are not in the checkpoint itself; docs/benchmarks.md).
  const thread = Effect.gen(function* () {
    const { did } = yield* RequestUser
    const id = yield* sessionIdParam
    const session = yield* sessionsApi.get(did, id).pipe(Effect.mapError(sessionFailure))
    if (session === undefined) return yield* Effect.fail(notFound(id))
    const saver = yield* saverOf(s, did)
    const tuple = yield* tryPromise("load thread", () => saver.getTuple({ configurable: { thread_id: id } }))
    const owner = ownerOf(tuple?.checkpoint.channel_values)
    if (owner !== undefined && owner !== did) return yield* Effect.fail(notFound(id))
    // The dev console shows what the thread has loaded (docs/console.md).
    const loadedPlugins = LoadedPlugins.fromUnknown(tuple?.checkpoint.channel_values.loadedPlugins)
    return { id, saver, tuple, loadedPlugins }
  })

  /** `GET /messages/:sessionId`: the whole thread (the older contract). */
  const history = Effect.gen(function* () {
    const { id, saver, tuple } = yield* thread
    const messages = yield* tryPromise("load thread", () => messagesAt(saver, tuple))
    return json({ messages: messages.map(wireMessage), sessionId: id })
  })

  /**
   * `GET /sessions/:id/messages?limit&before&after`: the thread a few turns at a time, with
   * opaque cursors (`HistoryPage`), as the QiForge client SDK 1.4 pages it. On the SQLite saver
   * only the page's messages are decoded (`pageAt`, docs/benchmarks.md, history pages).
   */
  const historyPage = Effect.gen(function* () {
    const limit = (yield* pageParam("limit")) ?? HistoryPage.DEFAULT_TURNS_PER_PAGE
    const params = yield* searchParams
    const cursor = (name: string) => {
      const value = params.get(name)
      return value === null || value === "" ? undefined : value
    }
    const { saver, tuple } = yield* thread
    const page = yield* tryPromise("load thread", () =>
      pageAt(saver, tuple, { limit, before: cursor("before"), after: cursor("after") })
    )
    if (Either.isLeft(page)) {
      return yield* Effect.fail(new HttpFailure({ status: 400, message: page.left.message }))
    }
    return json({ ...page.right, messages: page.right.messages.map(wireMessage) })
  })

  return { create, list, remove, history, historyPage, thread }
}

/** Builds a router from `[method, path, handler]` rows. */
export const routerOf = <E, R>(
  rows: ReadonlyArray<
    readonly [HttpRouter.Route<E, R>["method"], `/${string}`, HttpRouter.Route.Handler<E, R>]
  >
): HttpRouter.HttpRouter<E, R> =>
  HttpRouter.fromIterable(rows.map(([method, path, handler]) => HttpRouter.makeRoute(method, path, handler)))

/** Type of a response-producing handler (for readability of the app's tables). */
export type Handler<R = never> = Effect.Effect<HttpServerResponse.HttpServerResponse, HttpFailure, R>
