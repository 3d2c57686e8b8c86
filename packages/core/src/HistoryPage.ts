/**
 * Paged history: a thread's messages a few turns at a time, the way chat clients load them
 * ("load earlier", then only what is new after each turn). A page holds `limit` whole turns (a
 * turn starts at a user's message and runs until the next one), oldest message first, with
 * opaque cursors to continue older (`prevCursor`) or newer (`nextCursor`).
 *
 * A cursor names a message by its position and a fingerprint of its id. History only ever
 * grows, so a position stays valid for as long as the thread does; the fingerprint makes a cursor
 * from another thread, or from a thread deleted and started again under the same id, a clear
 * error instead of a wrong page.
 *
 * `window` finds a page's bounds and cursors from what paging needs of each message (its id and
 * whether it starts a turn), so a reader holding a thread as deltas decodes only the page's
 * messages; `page` is the same rule over the messages themselves.
 */
import { Data, Either } from "effect"
import { fnv1a36 } from "./internal/hash.js"

/** What one request asks for: at most one of `before` and `after`. */
export interface PageRequest {
  /** Whole turns per page, 1..`MAX_TURNS_PER_PAGE`. */
  readonly limit: number
  /** Only messages strictly older than this cursor's message. */
  readonly before?: string | undefined
  /** Only messages strictly newer than this cursor's message. */
  readonly after?: string | undefined
}

/** One page. `nextCursor` is null only while the thread has no message at all. */
export interface Page<M> {
  /** Oldest first. */
  readonly messages: ReadonlyArray<M>
  /** Continue older from here; null once the thread's first message is on a page. */
  readonly prevCursor: string | null
  /** Continue newer from here (after the page's last message, or after the cursor it was asked after). */
  readonly nextCursor: string | null
  readonly hasOlder: boolean
  readonly hasNewer: boolean
}

/** How messages are read: their id, and whether one starts a turn (a user's message). */
export interface MessageView<M> {
  readonly idOf: (message: M) => string | undefined
  readonly startsTurn: (message: M) => boolean
}

/** Turns per page when the request gives no `limit` (the SDK's own default). */
export const DEFAULT_TURNS_PER_PAGE = 20
/** The largest `limit`: a page is a few turns, not the whole thread. */
export const MAX_TURNS_PER_PAGE = 200

/** A request that cannot be answered; `message` says why, for a 400. */
export class HistoryPageError extends Data.TaggedError("HistoryPageError")<{
  readonly reason: "invalid-cursor" | "invalid-request"
  readonly message: string
}> {}

// `<position>.<fingerprint of the message's id>`, both base 36: opaque to clients, URL-safe.
const encode = (position: number, id: string): string => `${position.toString(36)}.${fnv1a36(id)}`

const decode = (cursor: string): { readonly position: number; readonly fingerprint: string } | undefined => {
  const match = /^([0-9a-z]{1,11})\.([0-9a-z]{1,7})$/.exec(cursor)
  if (match === null) return undefined
  const position = Number.parseInt(match[1]!, 36)
  return Number.isSafeInteger(position) ? { position, fingerprint: match[2]! } : undefined
}

/** The id a cursor records: the message's own, or its position when it has none. */
const keyOf = <M>(view: MessageView<M>, message: M, position: number): string =>
  view.idOf(message) ?? `#${position}`

/** The position a cursor names, checked against the thread. */
const positionOf = <M>(
  messages: ReadonlyArray<M>,
  view: MessageView<M>,
  cursor: string,
  name: "before" | "after"
): Either.Either<number, HistoryPageError> => {
  const decoded = decode(cursor)
  const fail = (why: string) =>
    Either.left(
      new HistoryPageError({
        reason: "invalid-cursor",
        message: `'${name}' is not a cursor of this session's history (${why}); use a prevCursor or nextCursor this route gave.`
      })
    )
  if (decoded === undefined) return fail("it cannot be read")
  const message = messages[decoded.position]
  if (message === undefined || fnv1a36(keyOf(view, message, decoded.position)) !== decoded.fingerprint) {
    return fail("it names no message of it")
  }
  return Either.right(decoded.position)
}

/**
 * Which messages one page holds, `[start, end)` of the thread, and its cursors: a page without
 * its messages. A reader that can fetch a few messages by position (a saver that stores them as
 * deltas) asks for the window over the thread's outline (each message's id and whether it starts a
 * turn) and decodes only the page's messages; `page` is the same window over the messages themselves.
 */
export interface Window {
  /** Position of the page's first message. */
  readonly start: number
  /** Position after the page's last message (`start` for an empty page). */
  readonly end: number
  readonly prevCursor: string | null
  readonly nextCursor: string | null
  readonly hasOlder: boolean
  readonly hasNewer: boolean
}

const startsAt = <M>(messages: ReadonlyArray<M>, view: MessageView<M>, i: number, from: number): boolean =>
  i === from || view.startsTurn(messages[i]!)

/**
 * Start of the last `limit` turns before position `upTo` (0 when there are no more than that).
 * Scans back from `upTo` only as far as the page reaches, not the whole thread.
 */
const startOfLastTurns = <M>(
  messages: ReadonlyArray<M>,
  view: MessageView<M>,
  upTo: number,
  limit: number
) => {
  let turns = 0
  for (let i = upTo - 1; i >= 0; i--) {
    if (startsAt(messages, view, i, 0) && ++turns === limit) return i
  }
  return 0
}

/** End of the first `limit` turns from position `from` (what precedes a user message there is a turn too). */
const endOfFirstTurns = <M>(
  messages: ReadonlyArray<M>,
  view: MessageView<M>,
  from: number,
  limit: number
) => {
  let turns = 0
  for (let i = from; i < messages.length; i++) {
    if (startsAt(messages, view, i, from) && ++turns === limit + 1) return i
  }
  return messages.length
}

const windowOf = <M>(
  messages: ReadonlyArray<M>,
  view: MessageView<M>,
  start: number,
  end: number,
  afterPosition?: number
): Window => {
  const last = end > start ? end - 1 : afterPosition
  return {
    start,
    end,
    prevCursor: start > 0 && end > start ? encode(start, keyOf(view, messages[start]!, start)) : null,
    nextCursor: last === undefined ? null : encode(last, keyOf(view, messages[last]!, last)),
    hasOlder: start > 0,
    hasNewer: end < messages.length
  }
}

/**
 * The window of one page over `messages` (a thread's messages or its outline, oldest first):
 * without a cursor, the newest `limit` turns; with `before`, the `limit` turns before it; with
 * `after`, the `limit` turns after it (an answer to the same question can still be going on: what
 * follows the cursor's message counts as its turn). Reads `view` only for the page's messages, the
 * cursor's, and the turns it scans to find the page's bounds.
 */
export const window = <M>(
  messages: ReadonlyArray<M>,
  view: MessageView<M>,
  request: PageRequest
): Either.Either<Window, HistoryPageError> => {
  const { limit, before, after } = request
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_TURNS_PER_PAGE) {
    return Either.left(
      new HistoryPageError({
        reason: "invalid-request",
        message: `limit must be a whole number of turns from 1 to ${MAX_TURNS_PER_PAGE}.`
      })
    )
  }
  if (before !== undefined && after !== undefined) {
    return Either.left(
      new HistoryPageError({ reason: "invalid-request", message: "Give 'before' or 'after', not both." })
    )
  }
  if (after !== undefined) {
    return Either.map(positionOf(messages, view, after, "after"), (position) => {
      const from = position + 1
      return windowOf(messages, view, from, endOfFirstTurns(messages, view, from, limit), position)
    })
  }
  const end =
    before === undefined ? Either.right(messages.length) : positionOf(messages, view, before, "before")
  return Either.map(end, (upTo) =>
    windowOf(messages, view, startOfLastTurns(messages, view, upTo, limit), upTo)
  )
}

/** One page of `messages`: `window`'s messages and cursors. */
export const page = <M>(
  messages: ReadonlyArray<M>,
  view: MessageView<M>,
  request: PageRequest
): Either.Either<Page<M>, HistoryPageError> =>
  Either.map(window(messages, view, request), (w) => ({
    messages: messages.slice(w.start, w.end),
    prevCursor: w.prevCursor,
    nextCursor: w.nextCursor,
    hasOlder: w.hasOlder,
    hasNewer: w.hasNewer
  }))
