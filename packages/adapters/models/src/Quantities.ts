/**
 * Numbers, currencies and units mentioned in a message, for the scripted router's argument
 * adaptation (`Router.adaptArgs`). A manifest example says "Convert 250 euros to dollars." with
 * `{ amount: 250, from: "EUR", to: "USD" }`; a user who asks "convert 100 USD to EUR" means
 * `{ amount: 100, from: "USD", to: "EUR" }`. Words around a value do not line up here (the
 * example's "euros" is the user's "USD"), so these values are matched by kind and by role
 * instead: the example's k-th mention of a kind stands for the user's k-th one.
 *
 * The role: a unit or currency written against a number ("10 miles", "$5", "100 USD") is the
 * quantity's own; one standing alone ("…to kilometres") is the other side. Matching within each
 * role first reads "how many miles is 5 km" as from km to miles, which plain order would invert.
 *
 * The lexicons are general (ISO 4217 codes and common unit names), not the examples' catalog's.
 */

/** What kind of value a mention is. */
export type MentionKind = "number" | "currency" | "unit"

/** One value found in a text. */
export interface Mention {
  readonly kind: MentionKind
  /** The canonical value: a number, an ISO 4217 code, or a unit symbol (`km`, `lb`, `c`). */
  readonly value: number | string
  /** Written against a number (a quantity's own unit or currency); numbers are always `true`. */
  readonly attached: boolean
  /** The words as written ("kilometres", "$", "1,500"). */
  readonly text: string
}

// Identifiers such as INV-1002, 2025-06-02 or 10:30 stay one token (and so are no number).
const TOKEN = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*(?:[-.,:/][\p{L}\p{N}]+)*|[^\s\p{L}\p{N}]/gu
const NUMBER = /^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$/

/** Currency words by ISO 4217 code: the code itself always counts. */
const CURRENCY_WORDS: Readonly<Record<string, ReadonlyArray<string>>> = {
  USD: ["dollar", "dollars", "usd", "$", "buck", "bucks"],
  EUR: ["euro", "euros", "eur", "€"],
  GBP: ["pound", "pounds", "sterling", "gbp", "£", "quid"],
  JPY: ["yen", "jpy", "¥"],
  CHF: ["franc", "francs", "chf"],
  CNY: ["yuan", "renminbi", "rmb", "cny"],
  INR: ["rupee", "rupees", "inr", "₹"],
  SEK: ["krona", "kronor", "sek"],
  NOK: ["nok"],
  DKK: ["dkk"],
  PLN: ["zloty", "zlotys", "pln"],
  CZK: ["koruna", "czk"],
  HUF: ["forint", "huf"],
  MXN: ["peso", "pesos", "mxn"],
  BRL: ["reais", "brl"],
  ZAR: ["rand", "zar"],
  // Codes that are also English words ("try", "rub", "cad") count only in capitals (`mentions`).
  TRY: ["lira"],
  RUB: ["ruble", "rubles", "rouble", "roubles"],
  KRW: ["krw", "₩"],
  CAD: [],
  AUD: ["aud"],
  NZD: ["nzd"],
  SGD: ["sgd"],
  HKD: ["hkd"]
}
/** "Canadian dollars" and the like: the word before "dollar(s)" names the currency. */
const DOLLAR_COUNTRY: Readonly<Record<string, string>> = {
  us: "USD",
  american: "USD",
  canadian: "CAD",
  australian: "AUD",
  singapore: "SGD",
  kong: "HKD",
  zealand: "NZD"
}

/**
 * Unit words by symbol. Symbols that are also common words ("l", "m", "g", "c", "f", "k") count
 * only written against a number ("5 m", "350 F"), or for C, F and K in capitals ("…to F?").
 * "in" never counts: "1,500 in pounds" is a preposition far more often than inches.
 */
const UNIT_WORDS: Readonly<Record<string, ReadonlyArray<string>>> = {
  m: ["metre", "metres", "meter", "meters"],
  km: ["km", "kilometre", "kilometres", "kilometer", "kilometers", "kms"],
  cm: ["cm", "centimetre", "centimetres", "centimeter", "centimeters"],
  mm: ["mm", "millimetre", "millimetres", "millimeter", "millimeters"],
  mi: ["mi", "mile", "miles"],
  ft: ["ft", "foot", "feet"],
  in: ["inch", "inches"],
  yd: ["yd", "yard", "yards"],
  kg: ["kg", "kilo", "kilos", "kilogram", "kilograms", "kgs"],
  g: ["gram", "grams"],
  lb: ["lb", "lbs", "pound", "pounds"],
  oz: ["oz", "ounce", "ounces"],
  l: ["litre", "litres", "liter", "liters"],
  ml: ["ml", "millilitre", "millilitres", "milliliter", "milliliters"],
  gal: ["gal", "gallon", "gallons"],
  cup: ["cup", "cups"],
  c: ["celsius", "centigrade", "°c"],
  f: ["fahrenheit", "°f"],
  k: ["kelvin"]
}
const SHORT_UNITS = new Set(["m", "g", "l", "c", "f", "k"])
const TEMPERATURE_LETTERS = new Set(["C", "F", "K"])

const invert = (table: Readonly<Record<string, ReadonlyArray<string>>>): Map<string, string> => {
  const out = new Map<string, string>()
  for (const [key, words] of Object.entries(table)) for (const w of words) out.set(w, key)
  return out
}
const CURRENCY_BY_WORD = invert(CURRENCY_WORDS)
const UNIT_BY_WORD = invert(UNIT_WORDS)

/** Whether `value` names a currency this module knows (an ISO 4217 code, any case). */
export const isCurrencyCode = (value: string): boolean => Object.hasOwn(CURRENCY_WORDS, value.toUpperCase())

/** Whether `value` names a unit this module knows (its symbol or a name, any case). */
export const unitOf = (value: string): string | undefined => {
  const v = value.toLowerCase()
  return Object.hasOwn(UNIT_WORDS, v) ? v : UNIT_BY_WORD.get(v)
}

/** Parses "1,500", "42.50" or "7" (an ungrouped or comma-grouped decimal) as a number. */
const parseNumber = (text: string): number | undefined =>
  NUMBER.test(text) ? Number(text.replaceAll(",", "")) : undefined

/** Every number, currency and unit mention of `text`, in reading order. */
export const mentions = (text: string): Array<Mention> => {
  const words = Array.from(text.matchAll(TOKEN), (m) => m[0])
  const out: Array<Mention> = []
  const numberAt = (i: number) => i >= 0 && i < words.length && parseNumber(words[i]!) !== undefined
  for (let i = 0; i < words.length; i++) {
    const raw = words[i]!
    const word = raw.toLowerCase()
    const n = parseNumber(raw)
    if (n !== undefined) {
      out.push({ kind: "number", value: n, attached: true, text: raw })
      continue
    }
    // "°" then "C" is two tokens: read them as one.
    const degree = word === "°" && i + 1 < words.length ? `°${words[i + 1]!.toLowerCase()}` : undefined
    const next = words[i + 1]?.toLowerCase()
    // A currency or a unit is a quantity's own when a number stands right before it, or, for a
    // symbol written first ("$5", "€ 20"), right after it.
    const before = numberAt(i - 1)
    const after = numberAt(i + 1)
    let currency =
      CURRENCY_BY_WORD.get(word) ??
      (raw.length === 3 && raw === raw.toUpperCase() && isCurrencyCode(raw) ? raw : undefined)
    if (currency === "USD" && (word === "dollar" || word === "dollars")) {
      currency = DOLLAR_COUNTRY[words[i - 1]?.toLowerCase() ?? ""] ?? "USD"
    }
    if (currency !== undefined && !((word === "pound" || word === "pounds") && isWeightContext(next))) {
      const attached = before || (/^\p{Sc}$/u.test(raw) && after)
      out.push({ kind: "currency", value: currency, attached, text: raw })
    }
    const unit =
      degree !== undefined ? UNIT_BY_WORD.get(degree) : (UNIT_BY_WORD.get(word) ?? shortUnit(raw, before))
    if (unit !== undefined) {
      const text = degree !== undefined ? `°${words[i + 1]!}` : raw
      out.push({ kind: "unit", value: unit, attached: before, text })
      if (degree !== undefined) i++
    }
  }
  return out
}

/** "pounds of flour" is a weight; any other "pounds" may be money too (both kinds are listed). */
const isWeightContext = (next: string | undefined): boolean => next === "of"

const shortUnit = (raw: string, afterNumber: boolean): string | undefined => {
  const word = raw.toLowerCase()
  return SHORT_UNITS.has(word) && (afterNumber || TEMPERATURE_LETTERS.has(raw)) ? word : undefined
}

/**
 * The user's counterpart of the example's mention `index` (among the example's mentions of the
 * same kind): the mention in the same role (attached or not) and position within that role when
 * both texts have as many of that role; otherwise the one in the same position among all of the
 * kind when both have as many; otherwise none.
 */
export const counterpart = (
  example: ReadonlyArray<Mention>,
  user: ReadonlyArray<Mention>,
  index: number
): Mention | undefined => {
  const target = example[index]
  if (target === undefined) return undefined
  const ofKind = (list: ReadonlyArray<Mention>) => list.filter((m) => m.kind === target.kind)
  const exKind = ofKind(example)
  const userKind = ofKind(user)
  const role = (list: ReadonlyArray<Mention>) => list.filter((m) => m.attached === target.attached)
  const exRole = role(exKind)
  const userRole = role(userKind)
  const exOther = exKind.length - exRole.length
  const userOther = userKind.length - userRole.length
  if (exRole.length === userRole.length && exOther === userOther) return userRole[exRole.indexOf(target)]
  if (exKind.length === userKind.length) return userKind[exKind.indexOf(target)]
  return undefined
}
