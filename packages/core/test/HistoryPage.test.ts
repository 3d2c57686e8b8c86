import { HistoryPage } from "@plugboard/core"
import { Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

interface Msg {
  readonly id?: string
  readonly type: "human" | "ai" | "tool"
}

const view: HistoryPage.MessageView<Msg> = { idOf: (m) => m.id, startsTurn: (m) => m.type === "human" }

/** A thread of `turns` turns, each a human message then `replies` messages. */
const thread = (shape: ReadonlyArray<number>): Msg[] =>
  shape.flatMap((replies, t) => [
    { id: `h${t}`, type: "human" as const },
    ...Array.from({ length: replies }, (_, r) => ({
      id: `a${t}.${r}`,
      type: r % 2 ? ("tool" as const) : ("ai" as const)
    }))
  ])

const get = (messages: ReadonlyArray<Msg>, request: HistoryPage.PageRequest) =>
  Either.getOrThrow(HistoryPage.page(messages, view, request))

const ids = (p: HistoryPage.Page<Msg>) => p.messages.map((m) => m.id)

describe("HistoryPage.page", () => {
  it("the newest page holds the last `limit` whole turns, oldest first", () => {
    const messages = thread([1, 2, 0, 3])
    const p = get(messages, { limit: 2 })
    expect(ids(p)).toEqual(["h2", "h3", "a3.0", "a3.1", "a3.2"])
    expect(p.hasOlder).toBe(true)
    expect(p.hasNewer).toBe(false)
    expect(p.prevCursor).not.toBeNull()
    expect(p.nextCursor).not.toBeNull()
  })

  it("an empty thread: no messages, both cursors null", () => {
    expect(get([], { limit: 5 })).toEqual({
      messages: [],
      prevCursor: null,
      nextCursor: null,
      hasOlder: false,
      hasNewer: false
    })
  })

  it("walking back with prevCursor from the newest page yields every message once, in order (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(4), { maxLength: 30 }), fc.integer({ min: 1, max: 7 }), (shape, limit) => {
        const messages = thread(shape)
        const pages: Array<HistoryPage.Page<Msg>> = [get(messages, { limit })]
        while (pages.at(-1)!.hasOlder) {
          const cursor = pages.at(-1)!.prevCursor
          expect(cursor).not.toBeNull()
          pages.push(get(messages, { limit, before: cursor! }))
        }
        const seen = pages.reverse().flatMap(ids)
        expect(seen).toEqual(messages.map((m) => m.id))
        // Each page is at most `limit` turns, and never splits a turn.
        for (const p of pages) {
          expect(p.messages.filter((m) => m.type === "human").length).toBeLessThanOrEqual(limit)
          if (p.messages.length > 0)
            expect(p.messages[0]!.type === "human" || p.hasOlder === false).toBe(true)
        }
      })
    )
  })

  it("after nextCursor: what the thread gained since, whole turns, then an empty page that keeps the cursor (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(3), { minLength: 1, maxLength: 15 }),
        fc.array(fc.nat(3), { maxLength: 15 }),
        fc.integer({ min: 1, max: 5 }),
        (before, added, limit) => {
          const first = thread(before)
          const newest = get(first, { limit })
          // The thread grows by whole turns (ids continue), as turns are saved.
          const grown = [...first, ...thread([...before, ...added]).slice(first.length)]
          let cursor = newest.nextCursor!
          const gained: Array<string | undefined> = []
          for (let round = 0; round < 100; round++) {
            const tail = get(grown, { limit, after: cursor })
            gained.push(...ids(tail))
            expect(tail.nextCursor).not.toBeNull()
            cursor = tail.nextCursor!
            if (!tail.hasNewer) break
          }
          expect(gained).toEqual(grown.slice(first.length).map((m) => m.id))
          const empty = get(grown, { limit, after: cursor })
          expect(empty.messages).toEqual([])
          expect(empty.nextCursor).toBe(cursor)
          expect(empty.hasNewer).toBe(false)
        }
      )
    )
  })

  it("refuses a cursor it did not give, one of another thread, both cursors, and a bad limit", () => {
    const messages = thread([2, 2, 2])
    const other = thread([1]).map((m) => ({ ...m, id: `x-${m.id}` }))
    const cursor = get(messages, { limit: 1 }).prevCursor!
    const reason = (r: HistoryPage.PageRequest, m: ReadonlyArray<Msg> = messages) => {
      const e = HistoryPage.page(m, view, r)
      return Either.isLeft(e) ? e.left.reason : "ok"
    }
    expect(reason({ limit: 1, before: "nope!" })).toBe("invalid-cursor")
    expect(reason({ limit: 1, before: "zzzzzz.1" })).toBe("invalid-cursor")
    expect(reason({ limit: 1, before: cursor }, other)).toBe("invalid-cursor")
    expect(reason({ limit: 1, before: cursor, after: cursor })).toBe("invalid-request")
    expect(reason({ limit: 0 })).toBe("invalid-request")
    expect(reason({ limit: HistoryPage.MAX_TURNS_PER_PAGE + 1 })).toBe("invalid-request")
    expect(reason({ limit: 1, before: cursor })).toBe("ok")
  })

  it("messages before the first user message are a turn of their own; messages without an id page too", () => {
    const messages: Msg[] = [{ type: "ai" }, { type: "human" }, { type: "ai" }, { type: "human" }]
    const newest = get(messages, { limit: 1 })
    expect(newest.messages).toEqual([{ type: "human" }])
    const older = get(messages, { limit: 1, before: newest.prevCursor! })
    expect(older.messages).toEqual([{ type: "human" }, { type: "ai" }])
    const oldest = get(messages, { limit: 1, before: older.prevCursor! })
    expect(oldest.messages).toEqual([{ type: "ai" }])
    expect(oldest.hasOlder).toBe(false)
    expect(oldest.prevCursor).toBeNull()
  })

  it("window: the bounds and cursors page uses, found by scanning only the page's turns, are those of a scan of the whole range (property)", () => {
    // The rule as first written: every turn start of the range, then count from its end or its start.
    const starts = (messages: ReadonlyArray<Msg>, from: number, to: number) => {
      const out: number[] = []
      for (let i = from; i < to; i++) if (i === from || messages[i]!.type === "human") out.push(i)
      return out
    }
    const win = (messages: ReadonlyArray<Msg>, request: HistoryPage.PageRequest) =>
      Either.getOrThrow(HistoryPage.window(messages, view, request))
    fc.assert(
      fc.property(
        fc.array(fc.nat(4), { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 1, max: 6 }),
        fc.nat(),
        (shape, limit, pick) => {
          const messages = thread(shape)
          const newest = win(messages, { limit })
          const all = starts(messages, 0, messages.length)
          expect(newest.end).toBe(messages.length)
          expect(newest.start).toBe(all.length > limit ? all[all.length - limit]! : 0)
          // A cursor names a position and its message's id: the newest page of the thread cut after
          // position `at` ends with the cursor of `at`, valid on the whole thread.
          const at = pick % messages.length
          const cursor = win(messages.slice(0, at + 1), { limit: 1 }).nextCursor!
          const before = win(messages, { limit, before: cursor })
          const older = starts(messages, 0, at)
          expect(before.end).toBe(at)
          expect(before.start).toBe(older.length > limit ? older[older.length - limit]! : 0)
          expect(before.hasNewer).toBe(true)
          const after = win(messages, { limit, after: cursor })
          const newer = starts(messages, at + 1, messages.length)
          expect(after.start).toBe(at + 1)
          expect(after.end).toBe(newer.length > limit ? newer[limit]! : messages.length)
          expect(after.hasNewer).toBe(after.end < messages.length)
          // page is window's slice.
          const p = Either.getOrThrow(HistoryPage.page(messages, view, { limit, after: cursor }))
          expect(p).toEqual({
            messages: messages.slice(after.start, after.end),
            prevCursor: after.prevCursor,
            nextCursor: after.nextCursor,
            hasOlder: after.hasOlder,
            hasNewer: after.hasNewer
          })
        }
      )
    )
  })
})
