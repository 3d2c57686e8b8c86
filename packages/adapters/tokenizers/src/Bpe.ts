/**
 * Token counting with tiktoken's byte-pair encoding, built for counting: js-tiktoken's encoder
 * keeps two maps keyed by comma-joined byte lists and builds them through a 200,000-key object
 * (about half a second for o200k, the largest share of a `plugboard inspect` run). Counting
 * needs one map, keyed here by the piece's UTF-8 bytes as a Latin-1 string (for ASCII, the piece
 * itself), decoded straight from the ranks' base64. The merge loop is js-tiktoken's
 * `bytePairMerge`, step for step (same lowest-rank-first, leftmost-on-ties order), so counts are
 * identical (property-tested against js-tiktoken's `encode`).
 */

/** The ranks as js-tiktoken bundles them (`js-tiktoken/ranks/*`). */
export interface BpeRanks {
  readonly pat_str: string
  readonly bpe_ranks: string
}

/** A counting-only BPE encoder. */
export interface BpeCounter {
  /** Number of tokens of `text`, special-token spellings counted as ordinary text. */
  readonly count: (text: string) => number
  /** The pre-tokenizer pattern (regex source, flags `gu`). */
  readonly pattern: string
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
const SIXBITS = new Int8Array(128).fill(-1)
for (let i = 0; i < BASE64.length; i++) SIXBITS[BASE64.charCodeAt(i)] = i

/** `s[from, to)` (base64) decoded to a Latin-1 string of its bytes. */
const decodeBase64 = (s: string, from: number, to: number, bytes: Array<number>): string => {
  bytes.length = 0
  let buffer = 0
  let bits = 0
  for (let i = from; i < to; i++) {
    const v = SIXBITS[s.charCodeAt(i) & 127]!
    if (v < 0) break // "=" padding
    buffer = ((buffer << 6) | v) & 0xffffff
    bits += 6
    if (bits >= 8) {
      bits -= 8
      bytes.push((buffer >> bits) & 255)
    }
  }
  return String.fromCharCode(...bytes)
}

/** Rank by byte string, from js-tiktoken's `bpe_ranks` ("<prefix> <offset> <tok> <tok> ..." lines). */
const parseRanks = (text: string): Map<string, number> => {
  const ranks = new Map<string, number>()
  const bytes: Array<number> = []
  let i = 0
  const n = text.length
  while (i < n) {
    let eol = text.indexOf("\n", i)
    if (eol === -1) eol = n
    if (eol > i) {
      const s1 = text.indexOf(" ", i)
      const s2 = text.indexOf(" ", s1 + 1)
      let rank = Number.parseInt(text.slice(s1 + 1, s2 === -1 || s2 > eol ? eol : s2), 10)
      let at = s2 === -1 || s2 > eol ? eol : s2 + 1
      while (at < eol) {
        let end = text.indexOf(" ", at)
        if (end === -1 || end > eol) end = eol
        if (end > at) ranks.set(decodeBase64(text, at, end, bytes), rank++)
        at = end + 1
      }
    }
    i = eol + 1
  }
  return ranks
}

const isAscii = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) return false
  return true
}

/** The UTF-8 bytes of `piece` as a Latin-1 string (lone surrogates become U+FFFD, as TextEncoder does). */
const utf8 = (piece: string): string =>
  isAscii(piece) ? piece : Buffer.from(piece, "utf8").toString("latin1")

/** Number of tokens js-tiktoken's `bytePairMerge` leaves `piece` (bytes, as Latin-1) in. */
const mergeCount = (piece: string, ranks: Map<string, number>, bounds: Array<number>): number => {
  const n = piece.length
  if (n <= 1) return n
  bounds.length = 0
  for (let i = 0; i <= n; i++) bounds.push(i)
  let parts = n
  while (parts > 1) {
    let min = Number.POSITIVE_INFINITY
    let at = -1
    for (let i = 0; i < parts - 1; i++) {
      const rank = ranks.get(piece.slice(bounds[i], bounds[i + 2]))
      if (rank !== undefined && rank < min) {
        min = rank
        at = i
      }
    }
    if (at < 0) break
    bounds.splice(at + 1, 1)
    parts--
  }
  return parts
}

/** A counter over `ranks`; parsing them is the one-off cost. */
export const makeBpeCounter = (source: BpeRanks): BpeCounter => {
  const ranks = parseRanks(source.bpe_ranks)
  const regex = new RegExp(source.pat_str, "gu")
  const bounds: Array<number> = []
  return {
    pattern: source.pat_str,
    count: (text) => {
      regex.lastIndex = 0
      let n = 0
      for (let m = regex.exec(text); m !== null; m = regex.exec(text)) {
        const piece = utf8(m[0])
        n += ranks.has(piece) ? 1 : mergeCount(piece, ranks, bounds)
      }
      return n
    }
  }
}
