/**
 * The router's argument adaptation: a manifest example's arguments rewritten for the user's
 * message (`Router.adaptArgs` re-exports it). Its own module so that routing from the catalog and
 * routing from the tools a client offers (`Router.ts`) share it.
 */
import type { ManifestExample } from "@plugboard/core"
import * as Quantities from "../Quantities.js"

interface Token {
  readonly text: string
  readonly start: number
  readonly end: number
  readonly word: boolean
}

// Identifiers such as INV-1002, 2025-06-02, v1.2 or 10:30 stay one token.
const TOKEN = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*(?:[-.:/][\p{L}\p{N}]+)*|[^\s\p{L}\p{N}]/gu

const tokens = (text: string): Array<Token> =>
  Array.from(text.matchAll(TOKEN), (m) => ({
    text: m[0],
    start: m.index,
    end: m.index + m[0].length,
    word: /[\p{L}\p{N}]/u.test(m[0])
  }))

const same = (a: Token | undefined, b: Token | undefined): boolean =>
  a !== undefined && b !== undefined && a.text.toLowerCase() === b.text.toLowerCase()

const isCapitalised = (t: Token): boolean => /^\p{Lu}/u.test(t.text)

/** Index of the first occurrence of `needle` (as a token sequence) in `hay`, or -1. */
const findSpan = (hay: ReadonlyArray<Token>, needle: ReadonlyArray<Token>): number => {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let k = 0; k < needle.length; k++) if (!same(hay[i + k], needle[k])) continue outer
    return i
  }
  return -1
}

/**
 * Keeps the proper-noun part of a run when the example's value is one ("New York today" →
 * "New York" for "Berlin"). Otherwise a run that ran to its closing anchor (or to the end of the
 * sentence, when the value ended the example's) is kept whole; any other run keeps as many
 * words as the example's value had.
 */
const trimRun = (
  run: ReadonlyArray<Token>,
  value: ReadonlyArray<Token>,
  fromEnd: boolean,
  whole: boolean
): Array<Token> => {
  const ordered = fromEnd ? [...run].reverse() : [...run]
  if (value.length > 0 && value.every(isCapitalised)) {
    const caps: Array<Token> = []
    for (const t of ordered) {
      if (!isCapitalised(t)) break
      caps.push(t)
    }
    if (caps.length > 0) return fromEnd ? caps.reverse() : caps
  }
  if (whole) return [...run]
  const kept = ordered.slice(0, value.length)
  return fromEnd ? kept.reverse() : kept
}

/** The words of `user` standing where `value` stands in `example`, or undefined when they do not align. */
const alignValue = (example: string, value: string, user: string): string | undefined => {
  const ex = tokens(example)
  const val = tokens(value)
  if (val.length === 0) return undefined
  const at = findSpan(ex, val)
  if (at < 0) return undefined
  const left = ex[at - 1]
  const right = ex[at + val.length]
  const us = tokens(user)
  const maxRun = val.length + 3
  const candidates: Array<{ readonly run: Array<Token>; readonly exact: boolean }> = []
  if (left !== undefined) {
    us.forEach((t, p) => {
      if (!same(t, left)) return
      const run: Array<Token> = []
      let q = p + 1
      for (; q < us.length && run.length < maxRun; q++) {
        const u = us[q]!
        if (!u.word || same(u, right)) break
        run.push(u)
      }
      const closed = right === undefined || same(us[q], right)
      // The value ended the example's sentence: the user's words run to the end of theirs.
      const toEnd = right === undefined || !right.word
      if (run.length > 0) candidates.push({ run: trimRun(run, val, false, closed || toEnd), exact: closed })
    })
  } else if (right !== undefined) {
    us.forEach((t, p) => {
      if (!same(t, right)) return
      const run: Array<Token> = []
      for (let q = p - 1; q >= 0 && run.length < maxRun; q--) {
        const u = us[q]!
        if (!u.word) break
        run.unshift(u)
      }
      if (run.length > 0) candidates.push({ run: trimRun(run, val, true, false), exact: true })
    })
  }
  // When the anchor word occurs twice, the shortest exact run is the value, not the span between.
  const best =
    candidates.filter((c) => c.exact).sort((a, b) => a.run.length - b.run.length)[0] ?? candidates[0]
  if (best === undefined || best.run.length === 0) return undefined
  return user.slice(best.run[0]!.start, best.run.at(-1)!.end)
}

/** `value` written in the letter case of `like` (all capitals or all lower case; else as is). */
const caseOf = (like: string, value: string): string =>
  like === like.toUpperCase() && like !== like.toLowerCase()
    ? value.toUpperCase()
    : like === like.toLowerCase()
      ? value.toLowerCase()
      : value

/**
 * A number, currency code or unit argument adapted by kind (`Quantities.ts`): the user's
 * counterpart of the example's mention of that value, or `undefined` when the value is no such
 * mention of the example's text, or the user's message has no counterpart for it.
 */
const adaptQuantity = (
  value: unknown,
  example: ReadonlyArray<Quantities.Mention>,
  user: ReadonlyArray<Quantities.Mention>,
  used: Set<number>
): { readonly value: unknown } | undefined => {
  const find = (kind: Quantities.MentionKind, v: number | string) => {
    const index = example.findIndex((m, i) => !used.has(i) && m.kind === kind && m.value === v)
    if (index >= 0) used.add(index)
    return index < 0 ? undefined : { found: Quantities.counterpart(example, user, index) }
  }
  if (typeof value === "number") {
    const hit = find("number", value)
    return hit === undefined ? undefined : { value: hit.found?.value ?? value }
  }
  if (typeof value !== "string") return undefined
  if (Quantities.isCurrencyCode(value)) {
    const hit = find("currency", value.toUpperCase())
    if (hit !== undefined)
      return { value: hit.found === undefined ? value : caseOf(value, String(hit.found.value)) }
  }
  const unit = Quantities.unitOf(value)
  if (unit !== undefined) {
    const hit = find("unit", unit)
    if (hit === undefined) return undefined
    if (hit.found === undefined) return { value }
    // The tool takes symbols ("mi") or words ("miles"), as its example shows.
    const symbol = value.toLowerCase() === unit
    return { value: symbol ? caseOf(value, String(hit.found.value)) : hit.found.text }
  }
  return undefined
}

/**
 * The example's arguments adapted to `user`. A number, a currency code or a unit that the
 * example's text mentions becomes the user's value of the same kind in the same role
 * (`Quantities.ts`: "Convert 250 euros to dollars." → "convert 100 USD to EUR"). Any other string
 * argument whose value appears in the example's text is replaced by the words of `user` in the
 * same position (anchored on the neighbouring words), when they align. Every other argument is
 * kept as the example gives it.
 */
export const adaptArgs = (example: ManifestExample, user: string): Record<string, unknown> => {
  const exampleMentions = Quantities.mentions(example.user)
  const userMentions = Quantities.mentions(user)
  const used = new Set<number>()
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(example.args ?? {})) {
    const quantity = adaptQuantity(value, exampleMentions, userMentions, used)
    out[key] =
      quantity !== undefined
        ? quantity.value
        : typeof value === "string"
          ? (alignValue(example.user, value, user) ?? value)
          : value
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Arguments from a JSON Schema alone

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null

/** Property names whose value is the user's request itself, not a word picked out of it. */
const FREE_TEXT = /query|question|text|message|prompt|content|body|input|request|search|topic|description/i

/** The text between the first pair of quotes in `user`, if any. */
const quoted = (user: string): string | undefined =>
  /"([^"]+)"|“([^”]+)”|'([^']+)'/
    .exec(user)
    ?.slice(1)
    .find((g) => g !== undefined)

/**
 * The first run of capitalised words after the first word of a sentence ("What's the weather in
 * New York?" → "New York"): most often the name the request is about.
 */
const properNoun = (user: string): string | undefined => {
  const ts = tokens(user)
  const run: Array<Token> = []
  for (const [i, t] of ts.entries()) {
    const sentenceStart = i === 0 || /^[.!?]$/.test(ts[i - 1]!.text)
    if (t.word && isCapitalised(t) && !sentenceStart && t.text !== "I") run.push(t)
    else if (run.length > 0) break
  }
  return run.length === 0 ? undefined : user.slice(run[0]!.start, run.at(-1)!.end)
}

/** The schema's type, the first that is not `null` when it lists several. */
const typeOf = (schema: Record<string, unknown>): string | undefined => {
  const t = schema.type
  if (typeof t === "string") return t
  return Array.isArray(t) ? t.find((x): x is string => typeof x === "string" && x !== "null") : undefined
}

/**
 * A value for one property: its `const`, an `enum` value the user mentions (else the first), its
 * `default`; else by type: a string is quoted text, a proper noun or the whole request (the whole
 * request for a property named like free text); a number is the user's next number (else the
 * schema's `minimum`, else 0); a boolean `false`; an array empty; an object filled the same way.
 */
const valueFor = (key: string, schema: unknown, user: string, numbers: Array<number>): unknown => {
  if (!isRecord(schema)) return user.trim()
  if ("const" in schema) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    const lower = user.toLowerCase()
    return schema.enum.find((v) => typeof v === "string" && lower.includes(v.toLowerCase())) ?? schema.enum[0]
  }
  if ("default" in schema) return schema.default
  const branches = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : undefined
  const type = typeOf(schema)
  if (type === undefined && branches !== undefined) {
    const branch = branches.find((b) => !(isRecord(b) && b.type === "null")) ?? branches[0]
    return valueFor(key, branch, user, numbers)
  }
  switch (type) {
    case "integer":
    case "number": {
      const n = numbers.shift() ?? (typeof schema.minimum === "number" ? schema.minimum : 0)
      return type === "integer" ? Math.round(n) : n
    }
    case "boolean":
      return false
    case "array":
      return []
    case "object":
      return argsFromSchema(schema, user, numbers)
    case "null":
      return null
    default: {
      const text = `${key} ${typeof schema.description === "string" ? schema.description : ""}`
      if (FREE_TEXT.test(text)) return user.trim()
      return quoted(user) ?? properNoun(user) ?? user.trim()
    }
  }
}

/**
 * Arguments for a tool known only by its JSON Schema (no manifest example to adapt): a value for
 * each `required` property, taken from the user's message where one fits (see `valueFor`).
 * A heuristic good enough for a stand-in model: "What's the weather in Berlin?" gives
 * `{ city: "Berlin" }` to a tool that requires `city`. Optional properties are left out.
 */
export const argsFromSchema = (
  parameters: unknown,
  user: string,
  numbers: Array<number> = Quantities.mentions(user).flatMap((m) =>
    m.kind === "number" && typeof m.value === "number" ? [m.value] : []
  )
): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  if (!isRecord(parameters)) return out
  const properties = isRecord(parameters.properties) ? parameters.properties : {}
  const required = Array.isArray(parameters.required) ? parameters.required : []
  for (const key of required)
    if (typeof key === "string") out[key] = valueFor(key, properties[key], user, numbers)
  return out
}
