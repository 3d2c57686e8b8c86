/**
 * The in-memory SessionStore: the reference implementation every store's conformance suite also runs against.
 */
import { Effect, Layer } from "effect"
import { Clock } from "../../Clock.js"
import {
  applyPatch,
  type NewSession,
  type SessionPatch,
  type SessionRecord,
  SessionStore,
  SessionStoreError,
  type SessionStoreService,
  toSession,
  validateListOptions,
  validateNewSession,
  validateSessionId,
  validateUserDid
} from "./port.js"

/**
 * Compares strings by Unicode code point — the order SQLite's BINARY collation gives UTF-8
 * text — rather than JavaScript's UTF-16 code-unit order, so every store sorts ids alike.
 */
const compareCodePoints = (a: string, b: string): number => {
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i)!
    const y = b.codePointAt(j)!
    if (x !== y) return x < y ? -1 : 1
    i += x > 0xffff ? 2 : 1
    j += y > 0xffff ? 2 : 1
  }
  return i < a.length ? 1 : j < b.length ? -1 : 0
}

/** Orders records newest activity first: `updatedAtMs` desc, `createdAtMs` desc, id by code point. */
const compareRecords = (a: SessionRecord, b: SessionRecord): number =>
  b.updatedAtMs - a.updatedAtMs ||
  b.createdAtMs - a.createdAtMs ||
  compareCodePoints(a.sessionId, b.sessionId)

const notFound = (sessionId: string) =>
  new SessionStoreError({ reason: "not-found", message: `Session '${sessionId}' not found` })

/** Builds the in-memory SessionStore (state lives as long as the returned service). */
export const makeMemory: Effect.Effect<SessionStoreService, never, Clock> = Effect.gen(function* () {
  const clock = yield* Clock
  // did → sessionId → record. Effect runs each operation to completion without interleaving
  // (no async boundary inside), so plain maps are enough for atomicity here.
  const users = new Map<string, Map<string, SessionRecord>>()
  const userMap = (did: string) => {
    let m = users.get(did)
    if (m === undefined) {
      m = new Map()
      users.set(did, m)
    }
    return m
  }

  const insert = (userDid: string, input: NewSession, failIfExists: boolean) =>
    Effect.gen(function* () {
      const did = yield* validateUserDid(userDid)
      const v = yield* validateNewSession(input)
      const now = yield* clock.now()
      const sessions = userMap(did)
      const existing = sessions.get(v.sessionId)
      if (existing !== undefined) {
        if (failIfExists) {
          return yield* Effect.fail(
            new SessionStoreError({
              reason: "already-exists",
              message: `Session '${v.sessionId}' already exists`
            })
          )
        }
        return { session: toSession(existing), created: false }
      }
      const record: SessionRecord = {
        sessionId: v.sessionId,
        title: v.title,
        createdAtMs: now,
        updatedAtMs: now,
        oracleName: v.oracleName,
        oracleDid: v.oracleDid,
        lastProcessedCount: 0,
        userContext: v.userContext
      }
      sessions.set(v.sessionId, record)
      return { session: toSession(record), created: true }
    })

  const modify = (userDid: string, sessionId: string, patch: SessionPatch) =>
    Effect.gen(function* () {
      const did = yield* validateUserDid(userDid)
      const id = yield* validateSessionId(sessionId)
      const now = yield* clock.now()
      const sessions = users.get(did)
      const record = sessions?.get(id)
      if (sessions === undefined || record === undefined) return yield* Effect.fail(notFound(id))
      const next = yield* applyPatch(record, patch, now)
      sessions.set(id, next)
      return toSession(next)
    })

  return {
    create: (userDid, input) => Effect.map(insert(userDid, input, true), (r) => r.session),
    ensure: (userDid, input) => insert(userDid, input, false),
    get: (userDid, sessionId) =>
      Effect.gen(function* () {
        const did = yield* validateUserDid(userDid)
        const id = yield* validateSessionId(sessionId)
        const record = users.get(did)?.get(id)
        return record === undefined ? undefined : toSession(record)
      }),
    list: (userDid, options) =>
      Effect.gen(function* () {
        const did = yield* validateUserDid(userDid)
        const { limit, offset } = yield* validateListOptions(options)
        const all = Array.from(users.get(did)?.values() ?? []).sort(compareRecords)
        return { sessions: all.slice(offset, offset + limit).map(toSession), total: all.length }
      }),
    update: modify,
    touch: (userDid, sessionId) => modify(userDid, sessionId, {}),
    delete: (userDid, sessionId) =>
      Effect.gen(function* () {
        const did = yield* validateUserDid(userDid)
        const id = yield* validateSessionId(sessionId)
        return users.get(did)?.delete(id) ?? false
      })
  }
})

/** The in-memory SessionStore as a layer (needs a `Clock`). */
export const layerMemory: Layer.Layer<SessionStore, never, Clock> = Layer.effect(SessionStore, makeMemory)
