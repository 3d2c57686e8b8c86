/**
 * Large tool results as pages (docs/spec/meta-tools.md#read_result): a tool's answer longer than
 * the bound enters the conversation as its first page plus a note naming a handle, and the whole
 * answer is kept beside the thread, where the model reads it page by page with `read_result`.
 *
 * Why: one answer of a few megabytes (a log, a query result, a page dump) would otherwise be sent
 * on that model call and on every later call of the conversation, costing more than the whole
 * catalog and often more than the model's window. QiForge and Anthropic's context editing answer
 * it the same way: a bounded excerpt in the context, the rest a tool call away.
 *
 * The rule lives here once; a door decides only where the whole answer is kept (the LangGraph
 * loop keeps it in the ToolMessage's artifact, which is checkpointed with the thread, deleted
 * with it, and never sent to a provider) and passes a lookup to `ToolCall.plan`.
 */
import { Either } from "effect"
import { describe } from "./Describe.js"
import { READ_RESULT } from "./internal/metaTools.js"
import type { OfferedTool } from "./internal/offered.js"

export { READ_RESULT }

/**
 * Characters of a tool's answer that enter the conversation as they are; a longer answer is cut
 * to its first page. 20,000 characters are about 5,000 tokens: a long file or a page of search
 * results fits, a dump does not. `TOOL_RESULT_MAX_CHARS` sets it on the server
 * (docs/configuration.md).
 */
export const DEFAULT_MAX_CHARS = 20_000

/** The smallest bound accepted: below it the note itself would be most of a page. */
export const MIN_MAX_CHARS = 1_000

/** `read_result` as offered: only on a thread that holds a kept result (`offer`). Terse, as the others. */
export const definition: OfferedTool = {
  name: READ_RESULT,
  description: "Read a page of a tool result that was cut, by the handle its note gave.",
  parameters: {
    type: "object",
    properties: { handle: { type: "string" }, page: { type: "integer" } },
    required: ["handle"]
  },
  kind: "meta"
}

/**
 * What is offered for kept results: `read_result` when the thread holds one, nothing otherwise,
 * so a conversation that never had a large answer pays nothing for it. Pass it last in
 * `Offer.offer`'s `extra`, so the cached prefix of the offer is unchanged.
 */
export const offer = (holdsKeptResult: boolean): ReadonlyArray<OfferedTool> =>
  holdsKeptResult ? [definition] : []

/** A tool's answer cut to its first page (`cut`). */
export interface Cut {
  /** What the model is given: the first page, then the note naming the handle. */
  readonly excerpt: string
  /** The whole answer, to keep where `read` can find it by `handle`. */
  readonly full: string
  readonly handle: string
  readonly pages: number
}

const count = (n: number): string => n.toLocaleString("en-US")

/** Where a page ends: never between the two halves of a surrogate pair. */
const pageEnd = (text: string, end: number): number => {
  if (end >= text.length) return text.length
  const code = text.charCodeAt(end)
  return code >= 0xdc00 && code <= 0xdfff ? end - 1 : end
}

/** The page boundaries of `text` for a page size: [start, end) of each page, in order. */
const boundaries = (text: string, pageChars: number): ReadonlyArray<readonly [number, number]> => {
  const out: Array<readonly [number, number]> = []
  let start = 0
  while (start < text.length) {
    const end = pageEnd(text, start + pageChars)
    out.push([start, end > start ? end : start + pageChars])
    start = out[out.length - 1]![1]
  }
  return out
}

const nextCall = (handle: string, page: number): string =>
  `${READ_RESULT} with ${JSON.stringify({ handle, page })}`

/**
 * Cuts an answer longer than `maxChars` (default `DEFAULT_MAX_CHARS`) to its first page and a
 * note: how long the answer is, how many pages, and the call that reads the next one. `undefined`
 * when the answer fits: it enters the conversation whole. `handle` is the door's (the tool call's
 * id in the LangGraph loop); it must be unique within the thread.
 */
export const cut = (handle: string, text: string, maxChars: number = DEFAULT_MAX_CHARS): Cut | undefined => {
  const bound = Math.max(MIN_MAX_CHARS, Math.floor(maxChars))
  if (text.length <= bound) return undefined
  const pages = boundaries(text, bound)
  const [, end] = pages[0]!
  const note =
    `[This result is ${count(text.length)} characters, over the bound of ${count(bound)}: above is page 1 of ${pages.length}. ` +
    `The whole result is kept; call ${nextCall(handle, 2)} for the next page. Read only the pages you need.]`
  return { excerpt: `${text.slice(0, end)}\n\n${note}`, full: text, handle, pages: pages.length }
}

/** What `read` answers: a page and where it stands, or what was wrong with the call. */
export type ReadAnswer = Either.Either<string, string>

/**
 * Answers a `read_result` call: page `page` (from 1; default 2, the first page the excerpt did
 * not show) of the kept result `handle`, found with `lookup`, cut with the same bound as `cut`.
 * A call that is not `{ handle: string, page?: integer }`, names no kept result, or asks past the
 * last page is answered with what is wrong (`Left`); nothing is thrown.
 */
export const read = (
  lookup: (handle: string) => string | undefined,
  args: unknown,
  maxChars: number = DEFAULT_MAX_CHARS
): ReadAnswer => {
  const usage = `Call it as ${READ_RESULT} with {"handle": "<the handle a cut result's note gave>", "page": 2}.`
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return Either.left(`${READ_RESULT} expects an object of arguments, got ${describe(args)}. ${usage}`)
  }
  const { handle, page } = args as { handle?: unknown; page?: unknown }
  if (typeof handle !== "string" || handle === "") {
    return Either.left(`${READ_RESULT}: 'handle' must be a string. ${usage}`)
  }
  if (page !== undefined && (typeof page !== "number" || !Number.isInteger(page) || page < 1)) {
    return Either.left(
      `${READ_RESULT}: 'page' must be a whole number of at least 1, got ${JSON.stringify(page)}.`
    )
  }
  const full = lookup(handle)
  if (full === undefined) {
    return Either.left(
      `${READ_RESULT}: no result with handle ${JSON.stringify(handle.slice(0, 200))} is kept in this conversation. Handles are given in the note of a result that was cut.`
    )
  }
  const bound = Math.max(MIN_MAX_CHARS, Math.floor(maxChars))
  const pages = boundaries(full, bound)
  const wanted = page ?? 2
  if (wanted > pages.length) {
    return Either.left(
      `${READ_RESULT}: result ${JSON.stringify(handle)} has ${pages.length} page${pages.length === 1 ? "" : "s"}; there is no page ${wanted}.`
    )
  }
  const [start, end] = pages[wanted - 1]!
  const where =
    wanted === pages.length
      ? `[Page ${wanted} of ${pages.length} of result ${JSON.stringify(handle)}: the last page.]`
      : `[Page ${wanted} of ${pages.length} of result ${JSON.stringify(handle)}; call ${nextCall(handle, wanted + 1)} for the next page.]`
  return Either.right(`${full.slice(start, end)}\n\n${where}`)
}
