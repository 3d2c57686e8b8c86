/**
 * Text as core shows it: how catalog messages echo names and thrown values a plugin supplied (they
 * may be anything), and how a longer text is shortened at a word (a derived manifest, a title).
 */

/** Longest name echoed in a message (ManifestValidation clips plugin names the same way). */
export const MAX_NAME = 200
// biome-ignore lint/suspicious/noControlCharactersInRegex: detecting exactly those
const CONTROL = /[\u0000-\u001f\u007f]/g

/** A name as messages show it: clipped to `max` and with control characters escaped. */
export const shown = (name: string, max: number = MAX_NAME): string => {
  const short = name.length > max ? `${name.slice(0, max)}…` : name
  return short.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
}

/**
 * `text` within `max` characters (code points): a longer one is cut at its last space in the
 * second half of the limit (else mid-word, for a very long word), trailing punctuation dropped,
 * and marked with `…`.
 */
export const cutAtWord = (text: string, max: number): string => {
  const chars = Array.from(text)
  if (chars.length <= max) return text
  const head = chars.slice(0, max - 1).join("")
  const space = head.lastIndexOf(" ")
  return `${(space >= max / 2 ? head.slice(0, space) : head).replace(/[\s.,;:!?-]+$/, "")}…`
}
