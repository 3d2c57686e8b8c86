/**
 * BERT's uncased WordPiece tokenizer (the one all-MiniLM-L6-v2 was trained with), read from a
 * `vocab.txt` (one piece per line, its id the line number). It does what the reference
 * tokenizer's "BertNormalizer + BertPreTokenizer + WordPiece" does: drop control characters,
 * treat every whitespace as a space, put spaces around CJK ideographs, lowercase and strip
 * accents, split on whitespace and punctuation, then cut each word greedily into the longest
 * pieces the vocabulary knows (`##` marks a piece inside a word); a word it cannot cut, or of
 * more than 100 characters, becomes `[UNK]`. Its ids match the reference on the test corpus
 * (test/WordPiece.test.ts).
 */
import { Data } from "effect"

/** A vocabulary that cannot be used: `reason` says why, `message` what to fix. */
export class VocabularyError extends Data.TaggedError("VocabularyError")<{
  readonly reason: "empty" | "missing-special-token" | "duplicate-piece"
  readonly message: string
}> {}

/** A loaded vocabulary. */
export interface WordPiece {
  readonly ids: ReadonlyMap<string, number>
  readonly cls: number
  readonly sep: number
  readonly unk: number
  readonly pad: number
}

const MAX_WORD = 100
const CONTROL = /\p{C}/u
const SPACE = /\p{Zs}/u
const PUNCT = /\p{P}/u
const MARK = /\p{Mn}/gu

const isCjk = (cp: number) =>
  (cp >= 0x4e00 && cp <= 0x9fff) ||
  (cp >= 0x3400 && cp <= 0x4dbf) ||
  (cp >= 0x20000 && cp <= 0x2a6df) ||
  (cp >= 0x2a700 && cp <= 0x2b73f) ||
  (cp >= 0x2b740 && cp <= 0x2b81f) ||
  (cp >= 0x2b820 && cp <= 0x2ceaf) ||
  (cp >= 0xf900 && cp <= 0xfaff) ||
  (cp >= 0x2f800 && cp <= 0x2fa1f)

/** BERT counts ASCII symbols such as `$`, `+`, `^` as punctuation, beside Unicode's P classes. */
const isPunct = (ch: string, cp: number) =>
  (cp >= 33 && cp <= 47) ||
  (cp >= 58 && cp <= 64) ||
  (cp >= 91 && cp <= 96) ||
  (cp >= 123 && cp <= 126) ||
  PUNCT.test(ch)

/** Reads a `vocab.txt`. Fails when it is empty, lacks a special token or repeats a piece. */
export const parseVocabulary = (text: string): WordPiece => {
  const lines = text.split(/\r?\n/)
  if (lines.at(-1) === "") lines.pop()
  if (lines.length === 0)
    throw new VocabularyError({ reason: "empty", message: "the vocabulary has no pieces" })
  const ids = new Map<string, number>()
  for (const [i, piece] of lines.entries()) {
    if (ids.has(piece))
      throw new VocabularyError({
        reason: "duplicate-piece",
        message: `piece '${piece.slice(0, 40)}' appears twice (lines ${ids.get(piece)! + 1} and ${i + 1}): not a WordPiece vocabulary`
      })
    ids.set(piece, i)
  }
  const special = (token: string) => {
    const id = ids.get(token)
    if (id === undefined)
      throw new VocabularyError({
        reason: "missing-special-token",
        message: `the vocabulary has no ${token} piece: not a BERT vocabulary`
      })
    return id
  }
  return { ids, cls: special("[CLS]"), sep: special("[SEP]"), unk: special("[UNK]"), pad: special("[PAD]") }
}

/** Lowercased, accent-free words and punctuation marks of `text`, as BERT's pre-tokenizer cuts them. */
export const basicTokens = (text: string): Array<string> => {
  let cleaned = ""
  for (const ch of text) {
    const cp = ch.codePointAt(0)!
    if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r" || SPACE.test(ch)) cleaned += " "
    else if (cp === 0 || cp === 0xfffd || CONTROL.test(ch)) continue
    else if (isCjk(cp)) cleaned += ` ${ch} `
    else cleaned += ch
  }
  const out: Array<string> = []
  for (const raw of cleaned.split(" ")) {
    if (raw.length === 0) continue
    const word = raw.toLowerCase().normalize("NFD").replace(MARK, "")
    let current = ""
    for (const ch of word) {
      if (isPunct(ch, ch.codePointAt(0)!)) {
        if (current.length > 0) out.push(current)
        out.push(ch)
        current = ""
      } else current += ch
    }
    if (current.length > 0) out.push(current)
  }
  return out
}

/** The ids of one word's pieces: longest known prefix first, `##` continuations; `[UNK]` if none fits. */
const pieces = (vocab: WordPiece, word: string): Array<number> => {
  const chars = [...word]
  if (chars.length > MAX_WORD) return [vocab.unk]
  const out: Array<number> = []
  let start = 0
  while (start < chars.length) {
    let end = chars.length
    let found: number | undefined
    while (start < end) {
      const piece = (start > 0 ? "##" : "") + chars.slice(start, end).join("")
      found = vocab.ids.get(piece)
      if (found !== undefined) break
      end--
    }
    if (found === undefined) return [vocab.unk]
    out.push(found)
    start = end
  }
  return out
}

/**
 * The ids the model reads for `text`: `[CLS]`, its pieces, `[SEP]`, cut to at most `maxLength`
 * ids in all (the pieces are truncated, `[SEP]` kept).
 */
export const encode = (vocab: WordPiece, text: string, maxLength: number): Array<number> => {
  const ids: Array<number> = [vocab.cls]
  for (const word of basicTokens(text)) {
    for (const id of pieces(vocab, word)) ids.push(id)
    if (ids.length >= maxLength - 1) break
  }
  const body = ids.slice(0, Math.max(1, maxLength - 1))
  body.push(vocab.sep)
  return body
}
