/** How catalog messages echo names and thrown values a plugin supplied (they may be anything). */

/** Longest name echoed in a message (ManifestValidation clips plugin names the same way). */
export const MAX_NAME = 200
// biome-ignore lint/suspicious/noControlCharactersInRegex: detecting exactly those
const CONTROL = /[\u0000-\u001f\u007f]/g

/** A name as messages show it: clipped to `max` and with control characters escaped. */
export const shown = (name: string, max: number = MAX_NAME): string => {
  const short = name.length > max ? `${name.slice(0, max)}…` : name
  return short.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
}
