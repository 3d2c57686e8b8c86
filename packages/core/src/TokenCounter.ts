/**
 * The `TokenCounter` port: how many tokens a text costs a model. Core ships a heuristic so that
 * budgets can be reasoned about with no tokenizer at hand; exact tokenizers (tiktoken's o200k,
 * cl100k) are adapters implementing the same service.
 */
import { Context, Layer } from "effect"

/** A token counter: `count` is pure and synchronous (budgets are computed in tight loops). */
export interface TokenCounterService {
  /** Identifies the counter in reports, e.g. `heuristic` or `o200k`. */
  readonly name: string
  readonly count: (text: string) => number
}

/** The port. */
export class TokenCounter extends Context.Tag("@plugboard/core/TokenCounter")<
  TokenCounter,
  TokenCounterService
>() {}

// Pieces as BPE pre-tokenizers cut them: a contraction, a word with its leading space, up to
// three digits, a run of punctuation with its leading space, or whitespace. Each alternative is
// its own group, so a piece's kind is the group that matched: the count needs no second look at
// the piece (it runs on every model call's new text: the user's message, each answer).
const PIECE = /('(?:[sdmt]|ll|ve|re))|( ?\p{L}+)|( ?\p{N}{1,3})|( ?[^\s\p{L}\p{N}]+)|(\s+)/gu

/** Characters of a piece after its one optional leading space. */
const bodyLength = (piece: string): number => (piece.charCodeAt(0) === 32 ? piece.length - 1 : piece.length)

/**
 * Counts like a modern BPE vocabulary, without one: a word of up to 8 letters is one token
 * (longer words one per 8 letters), a group of up to 3 digits one, a punctuation run one per 3
 * characters, a whitespace run containing a newline half a token, other whitespace nothing.
 * Measured against tiktoken o200k on the project's documents of the time, 60 MetaTool plugin
 * descriptions, 60 JSON schemas and a TypeScript file (docs/spec/token-budget.md#counting): 3.6% over in total, per text between 1% under (p10) and
 * 14% over (p90). It leans to over-counting, the safe side for a budget.
 */
const countHeuristic = (text: string): number => {
  let n = 0
  PIECE.lastIndex = 0
  for (let m = PIECE.exec(text); m !== null; m = PIECE.exec(text)) {
    const piece = m[0]
    if (m[2] !== undefined) n += Math.max(1, Math.ceil(bodyLength(piece) / 8))
    else if (m[3] !== undefined) n += 1
    else if (m[5] !== undefined) n += piece.includes("\n") ? 0.5 : 0
    // A contraction or a punctuation run.
    else n += Math.max(1, Math.ceil(bodyLength(piece) / 3))
  }
  return Math.ceil(n)
}

/** The heuristic counter (see `countHeuristic`). */
export const heuristic: TokenCounterService = { name: "heuristic", count: countHeuristic }

/** Provides the heuristic counter. */
export const layerHeuristic: Layer.Layer<TokenCounter> = Layer.succeed(TokenCounter, heuristic)

/** How `memoized` keeps its counts. */
export interface MemoOptions {
  /** Texts kept, least recently used dropped first. Default 512. */
  readonly maxEntries?: number | undefined
  /** Characters of the kept texts in all, least recently used dropped first; a text over an eighth of this is counted and not kept. Default 1,000,000. */
  readonly maxChars?: number | undefined
  /** Texts shorter than this are counted every time, for a counter cheaper than a lookup. Default 0: every text is kept. */
  readonly minLength?: number | undefined
  /** Lists of parts `countParts` keeps; past this it starts over. Default 64. */
  readonly maxPartLists?: number | undefined
}

/** A counter that remembers what it counted (`memoized`). */
export interface MemoizedCounter extends TokenCounterService {
  /**
   * The count of `render()`, remembered under `key` with `parts`: asked again with the same key
   * and the very same parts (the same objects in the same order) it answers without rendering.
   * For a text that is a function of immutable parts and costs more to build than to look up
   * (the offered tools' schemas, one `JSON.stringify` of their definitions). Other parts are
   * rendered and counted, not looked up by their text: new parts are counted again.
   */
  readonly countParts: (key: string, parts: ReadonlyArray<unknown>, render: () => string) => number
}

/**
 * The counter with a bounded memory of the texts it counted. A host counts the same system
 * prompt, the same offered tools' schemas and a thread's earlier messages at every model call of
 * every turn (the turn bound, docs/architecture.md#turn-bounds); a count is a pure function of
 * the text, so keeping the last ones changes no answer, only its cost. Short texts are kept too
 * since every call sends the thread's history again: the heuristic counts a short message in
 * about 1 µs, a kept one is found in half that (issue 37). Built once at boot, beside the counter
 * it wraps; its memory is the counter's own, so requests that share the counter share it.
 */
export const memoized = (counter: TokenCounterService, options?: MemoOptions): MemoizedCounter => {
  const maxEntries = Math.max(1, Math.trunc(options?.maxEntries ?? 512))
  const maxChars = Math.max(0, Math.trunc(options?.maxChars ?? 1_000_000))
  const minLength = Math.max(0, Math.trunc(options?.minLength ?? 0))
  const maxPartLists = Math.max(1, Math.trunc(options?.maxPartLists ?? 64))
  const counts = new Map<string, number>() // insertion order = least recently used first
  let chars = 0
  const parts = new Map<string, { readonly parts: ReadonlyArray<unknown>; readonly count: number }>()
  return {
    name: counter.name,
    count: (text) => {
      if (text.length < minLength) return counter.count(text)
      const known = counts.get(text)
      if (known !== undefined) {
        counts.delete(text)
        counts.set(text, known)
        return known
      }
      const n = counter.count(text)
      if (text.length > maxChars / 8) return n
      counts.set(text, n)
      chars += text.length
      while (counts.size > maxEntries || chars > maxChars) {
        const oldest = counts.keys().next().value as string
        counts.delete(oldest)
        chars -= oldest.length
      }
      return n
    },
    countParts: (key, list, render) => {
      const known = parts.get(key)
      if (
        known !== undefined &&
        known.parts.length === list.length &&
        known.parts.every((p, i) => p === list[i])
      )
        return known.count
      const n = counter.count(render())
      if (known === undefined && parts.size >= maxPartLists) parts.clear()
      parts.set(key, { parts: list.slice(), count: n })
      return n
    }
  }
}

/**
 * `counter.countParts` when the counter remembers (`memoized`), else the count of `render()`:
 * for a caller handed any counter.
 */
export const countParts = (
  counter: TokenCounterService,
  key: string,
  parts: ReadonlyArray<unknown>,
  render: () => string
): number => {
  return typeof (counter as Partial<MemoizedCounter>).countParts === "function"
    ? (counter as MemoizedCounter).countParts(key, parts, render)
    : counter.count(render())
}
