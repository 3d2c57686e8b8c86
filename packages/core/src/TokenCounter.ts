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
  /** Texts kept, least recently used dropped first. Default 256. */
  readonly maxEntries?: number | undefined
  /** Texts shorter than this are counted every time: cheap to count, and too many to keep. Default 256. */
  readonly minLength?: number | undefined
}

/**
 * The counter with a bounded memory of the long texts it counted. A host counts the same system
 * prompt and the same offered tools' schemas at every model call of every turn (the turn bound,
 * docs/architecture.md#turn-bounds); a count is a pure function of the text, so keeping the last
 * long ones changes no answer, only its cost. Built once at boot, beside the counter it wraps.
 */
export const memoized = (counter: TokenCounterService, options?: MemoOptions): TokenCounterService => {
  const maxEntries = Math.max(1, Math.trunc(options?.maxEntries ?? 256))
  const minLength = Math.max(0, Math.trunc(options?.minLength ?? 256))
  const counts = new Map<string, number>() // insertion order = least recently used first
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
      counts.set(text, n)
      if (counts.size > maxEntries) counts.delete(counts.keys().next().value as string)
      return n
    }
  }
}
