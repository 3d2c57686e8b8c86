/**
 * `ResultPages` (docs/spec/meta-tools.md#read_result): a long answer is cut to its first page and
 * read back page by page, and nothing is lost or repeated on the way.
 */
import { LoadedPlugins, Offer, ResultPages, ToolCall } from "@plugboard/core"
import { Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { smallCatalog } from "./runtime/fixtures.js"

const pageText = (answer: string): string => answer.slice(0, answer.lastIndexOf("\n\n["))

/** Every page of a kept result as `read` answers it (page 1 as `cut`'s excerpt). */
const allPages = (handle: string, text: string, bound: number): ReadonlyArray<string> => {
  const cut = ResultPages.cut(handle, text, bound)!
  const pages = [pageText(cut.excerpt)]
  for (let page = 2; page <= cut.pages; page++) {
    const read = ResultPages.read((h) => (h === handle ? cut.full : undefined), { handle, page }, bound)
    pages.push(pageText(Either.getOrThrow(read)))
  }
  return pages
}

describe("ResultPages", () => {
  it("an answer within the bound is not cut; a longer one's pages join back to it exactly, none over the bound, no surrogate pair split (property)", () => {
    fc.assert(
      fc.property(
        // A piece with emoji and accents, repeated: answers up to about 12,000 characters.
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 20 }),
        fc.integer({ min: 0, max: 600 }),
        fc.integer({ min: ResultPages.MIN_MAX_CHARS, max: 2_500 }),
        (piece, times, bound) => {
          const text = piece.repeat(times)
          const cut = ResultPages.cut("call_1", text, bound)
          if (text.length <= bound) {
            expect(cut).toBeUndefined()
            return
          }
          const pages = allPages("call_1", text, bound)
          expect(pages).toHaveLength(cut!.pages)
          expect(pages.join("")).toBe(text)
          for (const page of pages) {
            expect(page.length).toBeLessThanOrEqual(bound)
            const last = page.charCodeAt(page.length - 1)
            expect(last >= 0xd800 && last <= 0xdbff).toBe(false)
          }
        }
      ),
      { numRuns: 200 }
    )
  })

  it("the excerpt names the size, the pages and the call that reads the next one", () => {
    const cut = ResultPages.cut("call_9", "x".repeat(45_000))!
    expect(cut.pages).toBe(3)
    expect(cut.excerpt).toContain(
      '[This result is 45,000 characters, over the bound of 20,000: above is page 1 of 3. The whole result is kept; call read_result with {"handle":"call_9","page":2} for the next page.'
    )
  })

  it("a bad read_result call is answered with what is wrong, never thrown", () => {
    const lookup = (h: string) => (h === "call_1" ? "y".repeat(3_000) : undefined)
    const left = (args: unknown) => Either.getLeft(ResultPages.read(lookup, args, 1_000))._tag === "Some"
    expect(left("call_1")).toBe(true)
    expect(left({})).toBe(true)
    expect(left({ handle: "call_1", page: 0 })).toBe(true)
    expect(left({ handle: "call_1", page: 1.5 })).toBe(true)
    expect(ResultPages.read(lookup, { handle: "call_1", page: 4 }, 1_000)).toEqual(
      Either.left('read_result: result "call_1" has 3 pages; there is no page 4.')
    )
    expect(ResultPages.read(lookup, { handle: "other" }, 1_000)).toEqual(
      Either.left(
        'read_result: no result with handle "other" is kept in this conversation. Handles are given in the note of a result that was cut.'
      )
    )
    // Without a page, the second: the first one the excerpt did not show.
    expect(Either.getOrThrow(ResultPages.read(lookup, { handle: "call_1" }, 1_000))).toMatch(
      /\[Page 2 of 3 of result "call_1"; call read_result with \{"handle":"call_1","page":3\}/
    )
  })

  it("read_result is a reserved meta-tool, offered only when a result is kept, and planned as a meta answer", () => {
    const catalog = smallCatalog()
    expect(ResultPages.offer(false)).toEqual([])
    const offered = Offer.offer(catalog, LoadedPlugins.empty, ResultPages.offer(true))
    expect(offered.at(-1)?.name).toBe("read_result")
    const kept = "z".repeat(30_000)
    const step = {
      catalog,
      offered,
      loaded: LoadedPlugins.empty,
      keptResult: (h: string) => (h === "c" ? kept : undefined)
    }
    const decided = ToolCall.plan(step, { name: "read_result", args: { handle: "c", page: 2 } })
    expect(decided._tag).toBe("Answer")
    if (decided._tag === "Answer") {
      expect(decided.answer.outcome).toBe("meta")
      expect(decided.answer.content.startsWith("z".repeat(10_000))).toBe(true)
    }
    // Not offered (no kept result): the gate refuses it like any tool the step did not offer.
    const plain = Offer.offer(catalog, LoadedPlugins.empty)
    const refused = ToolCall.plan(
      { catalog, offered: plain, loaded: LoadedPlugins.empty },
      { name: "read_result", args: {} }
    )
    expect(refused._tag === "Answer" && refused.answer.outcome).toBe("refused")
  })
})
