/**
 * A memoising wrapper around a tiktoken counter, for reports that count tens of thousands of
 * texts. tiktoken encodes a text as the concatenation of its pre-tokenizer pieces, each
 * byte-pair-encoded on its own, so the count of a text is the sum of the counts of its pieces,
 * and the pieces repeat endlessly across tool schemas (`{"`, `type`, `":"`, `string`...).
 * Counting each distinct piece once makes a 5,000-plugin report about ten times faster, with
 * the same totals (tested against the plain counter).
 *
 * The pre-tokenizer patterns are the `pat_str` of js-tiktoken's bundled ranks, copied here
 * because the tokenizer adapter does not expose them. (The cache belongs in the adapter; until
 * it moves there, an unknown counter name is simply memoised per whole text.)
 */
import type { TokenCounter } from "@plugboard/core"

const CONTRACTIONS = "('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)"

/** Pre-tokenizer patterns by counter name (`TiktokenCounter.name`). */
const PATTERNS: Readonly<Record<string, string>> = {
  "tiktoken/o200k_base":
    `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+${CONTRACTIONS}?` +
    `|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*${CONTRACTIONS}?` +
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  "tiktoken/cl100k_base": `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`
}

/** Caches stop growing past these many entries (a bound on memory for huge catalogs). */
const MAX_TEXTS = 200_000
const MAX_PIECES = 1_000_000

/** `counter`, counting each distinct pre-tokenizer piece (or, for other counters, each text) once. */
export const cachedCounter = (
  counter: TokenCounter.TokenCounterService
): TokenCounter.TokenCounterService => {
  const source = PATTERNS[counter.name]
  const texts = new Map<string, number>()
  const remember = (cache: Map<string, number>, key: string, n: number) => {
    if (cache.size < (cache === texts ? MAX_TEXTS : MAX_PIECES)) cache.set(key, n)
    return n
  }
  if (source === undefined) {
    return {
      name: counter.name,
      count: (text) => texts.get(text) ?? remember(texts, text, counter.count(text))
    }
  }
  const pattern = new RegExp(source, "gu")
  const pieces = new Map<string, number>()
  const countPieces = (text: string): number => {
    let n = 0
    for (const m of text.matchAll(pattern)) {
      const piece = m[0]
      n += pieces.get(piece) ?? remember(pieces, piece, counter.count(piece))
    }
    return n
  }
  return {
    name: counter.name,
    count: (text) => texts.get(text) ?? remember(texts, text, countPieces(text))
  }
}
