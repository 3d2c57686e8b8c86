/**
 * What every example plugin shares: the per-catalog in-memory store its mutating tools write to,
 * the options a catalog is built with (an injectable clock), and a few schema and lookup helpers.
 *
 * The examples never touch the network, never draw random numbers and never read the clock
 * unless it was injected: the same catalog built twice answers the same calls the same way,
 * which is what lets the test suite run every tool and compare.
 */
import { Schema } from "effect"

/**
 * State of the mutating example tools (created events, drafted emails, logged workouts...).
 * One store per catalog: build two catalogs and they never see each other's writes. Collections
 * that belong to a person are keyed by the user's DID (`ExampleStore.forUser`).
 */
export class ExampleStore {
  readonly #collections = new Map<string, Array<unknown>>()
  readonly #counters = new Map<string, number>()

  /** The items of `collection`, oldest first (a live array: tools push to it). */
  list<T>(collection: string): Array<T> {
    let items = this.#collections.get(collection)
    if (items === undefined) {
      items = []
      this.#collections.set(collection, items)
    }
    return items as Array<T>
  }

  /** Appends `item` to `collection` and returns it. */
  add<T>(collection: string, item: T): T {
    this.list<T>(collection).push(item)
    return item
  }

  /** The next id of a sequence: `PREFIX-<start>`, `PREFIX-<start + 1>`, ... (deterministic). */
  nextId(prefix: string, start = 1): string {
    const n = this.#counters.get(prefix) ?? start
    this.#counters.set(prefix, n + 1)
    return `${prefix}-${n}`
  }

  /** The name of a per-user collection. */
  static forUser(collection: string, did: string): string {
    return `${collection}:${did}`
  }
}

/** How a catalog of examples is built. */
export interface ExampleOptions {
  /** Where mutating tools keep their state; a fresh store per catalog by default. */
  readonly store?: ExampleStore
  /** The clock the `clock` plugin reads; default the system clock. Tests inject a fixed one. */
  readonly now?: () => Date
}

/** What each domain module's factory receives. */
export interface ExampleContext {
  readonly store: ExampleStore
  readonly now: () => Date
}

/** A non-empty string of at most `max` characters, described for the model. */
export const text = (description: string, max = 200) =>
  Schema.String.pipe(Schema.minLength(1), Schema.maxLength(max)).annotations({ description })

/** A calendar date, `YYYY-MM-DD`. */
export const isoDate = (description: string) =>
  Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/)).annotations({
    description: `${description} (YYYY-MM-DD)`
  })

/** A finite number in `[min, max]`. */
export const between = (min: number, max: number, description: string) =>
  Schema.Number.pipe(Schema.finite(), Schema.between(min, max)).annotations({ description })

/** A whole number in `[min, max]`. */
export const intBetween = (min: number, max: number, description: string) =>
  Schema.Int.pipe(Schema.between(min, max)).annotations({ description })

/** An empty argument object, for tools that take none. */
export const noInput = Schema.Struct({})

/** Lower-cased, trimmed, inner whitespace collapsed: how fixture keys are compared. */
export const normalise = (s: string): string => s.trim().toLowerCase().replace(/\s+/g, " ")

/**
 * The row of `table` whose `key` matches `value` (case-insensitive). An unknown value throws
 * an error listing the known ones, which the agent sees as the tool's failure and can act on.
 */
export const lookup = <T, K extends keyof T>(
  table: ReadonlyArray<T>,
  key: K,
  value: string,
  what: string
): T => {
  const wanted = normalise(value)
  const row = table.find((r) => normalise(String(r[key])) === wanted)
  if (row === undefined) {
    const known = table.map((r) => String(r[key])).join(", ")
    throw new Error(`Unknown ${what} '${value}'. Known ${what}s in this offline fixture: ${known}.`)
  }
  return row
}

/** Rows of `table` whose text fields contain every word of `query` (case-insensitive). */
export const search = <T>(
  table: ReadonlyArray<T>,
  query: string,
  fields: ReadonlyArray<keyof T>
): Array<T> => {
  const words = normalise(query)
    .split(" ")
    .filter((w) => w.length > 0)
  return table.filter((row) => {
    const hay = fields.map((f) => normalise(String(row[f]))).join(" ")
    return words.every((w) => hay.includes(w))
  })
}

/** Rounds to `digits` decimals (money, rates, measures). */
export const round = (value: number, digits = 2): number => {
  const f = 10 ** digits
  return Math.round(value * f) / f
}

/** Days from `from` to `to` (both `YYYY-MM-DD`), computed in UTC so no local clock is involved. */
export const daysBetween = (from: string, to: string): number =>
  Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000)

/** `date` plus `days`, as `YYYY-MM-DD` (UTC). */
export const addDays = (date: string, days: number): string =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10)
