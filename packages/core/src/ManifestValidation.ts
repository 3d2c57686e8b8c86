/**
 * `validateManifest`: the hard and soft rules of docs/spec/manifest.md#validation.
 *
 * Hand-written rather than a Schema decode: it runs for every plugin at every boot (5,000+ in
 * large catalogs), it must collect every problem instead of stopping at the first, and it must
 * never throw, whatever it is handed (null, proxies whose getters throw, cyclic objects). Every
 * property read goes through `read`, which turns a throwing getter into an error message.
 *
 * Message wording, decided once:
 *   Plugin '<name>' manifest is missing required field '<path>'.
 *   Plugin '<name>' manifest field '<path>' must be <type> (got <type>).
 *   Plugin '<name>' manifest field '<path>' has unknown value '<v>' (expected one of ...).
 *   Plugin '<name>' manifest field '<path>' is <n> chars (recommended at most <max>).
 *   Plugin '<name>' manifest has unknown field '<path>' (ignored).
 * and, word for word as docs/spec/manifest.md#hard-errors has it, `Plugin '<name>' manifest example references unknown tool '<tool>'.`
 */
import { Category, MANIFEST_FIELDS, Stability, Visibility } from "./PluginManifest.js"

/** The outcome of `validateManifest`: hard violations fail boot, soft ones are logged. */
export interface ManifestValidationResult {
  /** True when there is no hard violation. */
  readonly valid: boolean
  /** Hard violations: boot fails, the whole list is printed. */
  readonly errors: string[]
  /** Soft violations: logged, the plugin still loads. */
  readonly warnings: string[]
}

/** Soft limits of docs/spec/manifest.md#warnings; exceeding one is a warning, never an error. */
export const ManifestLimits = {
  summaryMaxChars: 120,
  whenToUseMaxEntries: 8,
  whenToUseEntryMaxChars: 100
} as const

const VISIBILITIES: ReadonlyArray<string> = Visibility.literals
const CATEGORIES: ReadonlyArray<string> = Category.literals
const STABILITIES: ReadonlyArray<string> = Stability.literals

const MANIFEST_KEYS: ReadonlySet<string> = new Set(MANIFEST_FIELDS)
const EXAMPLE_KEYS = new Set(["user", "thought", "tool", "args"])

/**
 * Most entries read from one array. Beyond it the manifest is broken, not verbose: the cap keeps
 * a sparse `length: 1e9` array from hanging boot (a hard error says what was skipped).
 */
const MAX_ENTRIES = 1000
/** Most "unknown field" warnings per object before they are summarised in one line. */
const MAX_UNKNOWN_KEYS = 20

/** Longest quoted value echoed back in a message; huge strings must not flood the boot log. */
const MAX_ECHO = 60

/** Longest plugin name shown in a message (the catalog clips names the same way). */
const MAX_NAME = 200

/** Quotes a user-supplied string for a message, shortened and with control chars escaped. */
const echo = (value: string, max: number = MAX_ECHO): string => {
  const short = value.length > max ? `${value.slice(0, max)}…` : value
  // biome-ignore lint/suspicious/noControlCharactersInRegex: escaping exactly those
  return short.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
}

/** A JSON-ish type name for "got ..." in messages. */
const typeName = (value: unknown): string => {
  if (value === null) return "null"
  if (Array.isArray(value)) return "array"
  return typeof value
}

/** `error.message` without trusting the thrown value (it may itself throw on access). */
const describeThrown = (thrown: unknown): string => {
  try {
    if (thrown instanceof Error) return echo(String(thrown.message))
    return echo(String(thrown))
  } catch {
    return "an unprintable value"
  }
}

/** Marks a read that threw; the message has already been recorded. */
const UNREADABLE: unique symbol = Symbol("unreadable")
/** Marks a field present but unusable (wrong type, unknown value); already reported. */
const INVALID: unique symbol = Symbol("invalid")

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Collects the messages of one validation run; all reads go through it. */
class Collector {
  readonly errors: string[] = []
  readonly warnings: string[] = []
  readonly prefix: string
  /** The uncapped length of the array `length` last measured. */
  lastLength = 0
  constructor(pluginName: string) {
    this.prefix = `Plugin '${echo(pluginName, MAX_NAME)}' manifest`
  }

  read(target: object, key: string, path: string): unknown {
    try {
      return (target as Record<string, unknown>)[key]
    } catch (thrown) {
      this.errors.push(`${this.prefix} field '${path}' could not be read (${describeThrown(thrown)}).`)
      return UNREADABLE
    }
  }

  missing(path: string): void {
    this.errors.push(`${this.prefix} is missing required field '${path}'.`)
  }

  wrongType(path: string, expected: string, got: unknown): void {
    this.errors.push(`${this.prefix} field '${path}' must be ${expected} (got ${typeName(got)}).`)
  }

  /** Reads an optional string field; reports a wrong type, returns undefined when unusable. */
  string(target: object, key: string, path: string, required: boolean): string | undefined {
    const value = this.read(target, key, path)
    if (value === UNREADABLE) return undefined
    if (typeof value === "string") return value
    if (value === undefined) {
      if (required) this.missing(path)
    } else {
      this.wrongType(path, "a string", value)
    }
    return undefined
  }

  /**
   * Reads an optional array of strings. Wrong elements are reported and come back `undefined`;
   * a wrong container is reported and comes back `INVALID`.
   */
  strings(
    target: object,
    key: string,
    path: string
  ): ReadonlyArray<string | undefined> | undefined | typeof INVALID {
    const value = this.read(target, key, path)
    if (value === undefined) return undefined
    if (value === UNREADABLE) return INVALID
    if (!Array.isArray(value)) {
      this.wrongType(path, "an array of strings", value)
      return INVALID
    }
    const out: Array<string | undefined> = []
    const length = this.length(value, path)
    for (let i = 0; i < length; i++) {
      const item = this.read(value, String(i), `${path}[${i}]`)
      if (item === UNREADABLE) {
        out.push(undefined)
      } else if (typeof item === "string") {
        out.push(item)
      } else {
        this.wrongType(`${path}[${i}]`, "a string", item)
        out.push(undefined)
      }
    }
    return out
  }

  /** How many entries of an array to read: 0 when a proxy refuses to tell, capped. */
  length(array: ReadonlyArray<unknown>, path: string): number {
    const length = this.read(array, "length", `${path}.length`)
    if (typeof length !== "number") return 0
    this.lastLength = length
    if (length > MAX_ENTRIES) {
      this.errors.push(
        `${this.prefix} field '${path}' has ${length} entries (at most ${MAX_ENTRIES} are accepted; the rest were not checked).`
      )
      return MAX_ENTRIES
    }
    return length
  }

  /** Reads an optional enum field; an unknown value is a hard error and comes back `INVALID`. */
  literal(target: object, key: string, allowed: ReadonlyArray<string>): string | undefined | typeof INVALID {
    const value = this.read(target, key, key)
    if (value === undefined) return undefined
    if (value === UNREADABLE) return INVALID
    if (typeof value !== "string") {
      this.wrongType(key, `one of ${allowed.map((a) => `'${a}'`).join(", ")}`, value)
      return INVALID
    }
    if (!allowed.includes(value)) {
      this.errors.push(
        `${this.prefix} field '${key}' has unknown value '${echo(value)}' (expected one of ${allowed
          .map((a) => `'${a}'`)
          .join(", ")}).`
      )
      return INVALID
    }
    return value
  }

  /** Warns about keys docs/spec/manifest.md#fields does not define: newer manifests must still boot. */
  unknownKeys(target: object, known: ReadonlySet<string>, pathPrefix: string): void {
    let keys: ReadonlyArray<string>
    try {
      keys = Object.keys(target)
    } catch (thrown) {
      this.errors.push(
        `${this.prefix} field '${pathPrefix || "<root>"}' could not be read (${describeThrown(thrown)}).`
      )
      return
    }
    let unknown = 0
    for (const key of keys) {
      if (known.has(key)) continue
      unknown++
      if (unknown <= MAX_UNKNOWN_KEYS) {
        this.warnings.push(`${this.prefix} has unknown field '${pathPrefix}${echo(key)}' (ignored).`)
      }
    }
    if (unknown > MAX_UNKNOWN_KEYS) {
      const where = pathPrefix === "" ? "" : ` in '${pathPrefix.slice(0, -1)}'`
      this.warnings.push(
        `${this.prefix} has ${unknown - MAX_UNKNOWN_KEYS} more unknown fields${where} (ignored).`
      )
    }
  }
}

const countChars = (path: string, value: string, max: number, c: Collector): void => {
  if (value.length > max) {
    c.warnings.push(`${c.prefix} field '${path}' is ${value.length} chars (recommended at most ${max}).`)
  }
}

const validateExample = (example: unknown, index: number, c: Collector): string | undefined => {
  const path = `examples[${index}]`
  if (example === UNREADABLE) return undefined
  if (!isRecord(example)) {
    c.wrongType(path, "an object", example)
    return undefined
  }
  const user = c.string(example, "user", `${path}.user`, true)
  if (user !== undefined && user.trim().length === 0) {
    c.warnings.push(
      `${c.prefix} field '${path}.user' is empty; an example teaches nothing without a user message.`
    )
  }
  c.string(example, "thought", `${path}.thought`, false)
  const tool = c.string(example, "tool", `${path}.tool`, true)
  const args = c.read(example, "args", `${path}.args`)
  if (args !== UNREADABLE && args !== undefined && !isRecord(args))
    c.wrongType(`${path}.args`, "an object", args)
  c.unknownKeys(example, EXAMPLE_KEYS, `${path}.`)
  return tool
}

/**
 * The `tool` of every well-formed example, in order. Never throws; malformed examples are
 * skipped (`validateManifest` reports them). The catalog uses it for plugins whose tools are
 * only known per request, where an example cannot be checked at boot.
 */
export const exampleToolNames = (manifest: unknown): string[] => {
  const out: string[] = []
  try {
    if (!isRecord(manifest)) return out
    const examples = manifest.examples
    if (!Array.isArray(examples)) return out
    const length = Math.min(examples.length, MAX_ENTRIES)
    for (let i = 0; i < length; i++) {
      const example: unknown = examples[i]
      if (isRecord(example) && typeof example.tool === "string") out.push(example.tool)
    }
  } catch {
    // A hostile manifest: validateManifest reports why; there is nothing more to list.
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Fast path. Almost every manifest at boot is clean, and proving "no error, no warning" needs no
// message, no path string and no allocation. `isCleanManifest` only ever answers true when the
// full rules below would report nothing (a property test holds it to that); anything unusual
// (odd whitespace, non-ASCII tags, getters that throw, ...) answers false and takes the full path.

/** A printable ASCII character other than space: a string starting with one is not blank. */
const solidStart = (s: string): boolean => {
  const c = s.charCodeAt(0)
  return c > 32 && c < 127
}

const singleLine = (s: string): boolean => s.indexOf("\n") === -1 && s.indexOf("\r") === -1

/** Non-blank and at most `max` chars (a blank or long entry has something to report). */
const fineText = (s: unknown, max: number): boolean =>
  typeof s === "string" && s.length <= max && solidStart(s)

const fineStrings = (xs: unknown): boolean => {
  if (!Array.isArray(xs) || xs.length > MAX_ENTRIES) return false
  for (let i = 0; i < xs.length; i++) if (typeof xs[i] !== "string") return false
  return true
}

/** Lowercase ASCII-only (non-ASCII case rules take the full path) and no repeats. */
const fineTags = (xs: unknown): boolean => {
  if (!fineStrings(xs)) return false
  const tags = xs as ReadonlyArray<string>
  for (let i = 0; i < tags.length; i++) {
    const tag = tags[i] as string
    for (let j = 0; j < tag.length; j++) {
      const c = tag.charCodeAt(j)
      if ((c >= 65 && c <= 90) || c >= 128) return false
    }
    if (tags.indexOf(tag) !== i) return false
  }
  return true
}

const fineExample = (example: unknown, toolNames: readonly string[] | undefined): boolean => {
  if (!isRecord(example)) return false
  for (const key in example) {
    if (key !== "user" && key !== "tool" && key !== "args" && key !== "thought") return false
  }
  const { user, tool, thought, args } = example
  if (typeof user !== "string" || !solidStart(user) || typeof tool !== "string") return false
  if (thought !== undefined && typeof thought !== "string") return false
  if (args !== undefined && !isRecord(args)) return false
  return toolNames === undefined || toolNames.includes(tool)
}

const isCleanUnsafe = (m: unknown, toolNames: readonly string[] | undefined): boolean => {
  if (!isRecord(m)) return false
  for (const key in m) {
    switch (key) {
      case "title":
      case "summary":
      case "whenToUse":
      case "whenNotToUse":
      case "examples":
      case "tags":
      case "category":
      case "visibility":
      case "stability":
        continue
      default:
        return false
    }
  }
  const { title, summary, whenToUse, whenNotToUse, examples, tags, category, visibility, stability } = m
  if (typeof title !== "string" || !solidStart(title) || !singleLine(title)) return false
  if (!fineText(summary, ManifestLimits.summaryMaxChars) || !singleLine(summary as string)) return false
  if (
    visibility !== undefined &&
    visibility !== "on-demand" &&
    visibility !== "always" &&
    visibility !== "silent"
  )
    return false
  if (category !== undefined && !CATEGORIES.includes(category as string)) return false
  if (
    stability !== undefined &&
    stability !== "stable" &&
    stability !== "beta" &&
    stability !== "experimental"
  )
    return false
  if (whenToUse === undefined) {
    if (visibility !== "silent") return false
  } else {
    if (!Array.isArray(whenToUse) || whenToUse.length > ManifestLimits.whenToUseMaxEntries) return false
    if (whenToUse.length === 0 && visibility !== "silent") return false
    for (let i = 0; i < whenToUse.length; i++) {
      if (!fineText(whenToUse[i], ManifestLimits.whenToUseEntryMaxChars)) return false
    }
  }
  if (whenNotToUse !== undefined && !fineStrings(whenNotToUse)) return false
  if (tags !== undefined && !fineTags(tags)) return false
  if (examples !== undefined) {
    if (!Array.isArray(examples) || examples.length > MAX_ENTRIES) return false
    for (let i = 0; i < examples.length; i++) if (!fineExample(examples[i], toolNames)) return false
  }
  return true
}

/**
 * True when `manifest` passes every hard and soft rule: `validateManifest` would return no error
 * and no warning. Cheap (no allocation on the common path) and never throws; a false answer
 * only means "ask `validateManifest` for the details".
 */
export const isCleanManifest = (manifest: unknown, toolNames?: readonly string[]): boolean => {
  try {
    return isCleanUnsafe(manifest, Array.isArray(toolNames) ? toolNames : undefined)
  } catch {
    return false
  }
}

/**
 * Validates a plugin manifest against every hard and soft rule of docs/spec/manifest.md#validation. Never throws.
 *
 * `toolNames` are the tools the plugin registers; when given, every `examples[].tool` must be
 * one of them (`Plugin 'weather' manifest example references unknown tool 'foo'.`).
 */
export const validateManifest = (
  manifest: unknown,
  pluginName: string,
  toolNames?: readonly string[]
): ManifestValidationResult =>
  isCleanManifest(manifest, toolNames)
    ? { valid: true, errors: [], warnings: [] }
    : checkManifestRules(manifest, pluginName, toolNames)

/**
 * `validateManifest` without the clean-manifest shortcut: runs every rule and builds every
 * message. Same result, slower on clean manifests; tests hold the two to that.
 */
export const checkManifestRules = (
  manifest: unknown,
  pluginName: string,
  toolNames?: readonly string[]
): ManifestValidationResult => {
  let c: Collector
  try {
    c = new Collector(typeof pluginName === "string" ? pluginName : describeThrown(pluginName))
  } catch {
    c = new Collector("<unprintable>")
  }
  try {
    validateInto(manifest, toolNames, c)
  } catch (thrown) {
    // Every read is already guarded; this is the last line of the "never throws" promise.
    c.errors.push(`${c.prefix} could not be validated (${describeThrown(thrown)}).`)
  }
  return { valid: c.errors.length === 0, errors: c.errors, warnings: c.warnings }
}

const validateInto = (manifest: unknown, toolNames: readonly string[] | undefined, c: Collector): void => {
  if (!isRecord(manifest)) {
    c.errors.push(`${c.prefix} must be an object (got ${typeName(manifest)}).`)
    return
  }

  const title = c.string(manifest, "title", "title", true)
  if (title !== undefined) {
    if (title.trim().length === 0) {
      c.warnings.push(`${c.prefix} field 'title' is empty; it prefixes every tool description.`)
    } else if (/[\r\n]/.test(title)) {
      c.warnings.push(`${c.prefix} field 'title' spans several lines; it prefixes every tool description.`)
    }
  }

  const summary = c.string(manifest, "summary", "summary", true)
  if (summary !== undefined) {
    if (summary.trim().length === 0) {
      c.errors.push(`${c.prefix} field 'summary' must not be empty.`)
    } else {
      countChars("summary", summary, ManifestLimits.summaryMaxChars, c)
      if (/[\r\n]/.test(summary)) {
        c.warnings.push(
          `${c.prefix} field 'summary' spans several lines; the Tier-1 block shows it on one line.`
        )
      }
    }
  }

  const visibility = c.literal(manifest, "visibility", VISIBILITIES)
  c.literal(manifest, "category", CATEGORIES)
  c.literal(manifest, "stability", STABILITIES)

  const whenToUse = c.strings(manifest, "whenToUse", "whenToUse")
  let usable = 0
  let unusable = 0
  if (whenToUse !== undefined && whenToUse !== INVALID) {
    const count = c.lastLength
    if (count > ManifestLimits.whenToUseMaxEntries) {
      c.warnings.push(
        `${c.prefix} field 'whenToUse' has ${count} entries (recommended at most ${ManifestLimits.whenToUseMaxEntries}).`
      )
    }
    for (let i = 0; i < whenToUse.length; i++) {
      const entry = whenToUse[i]
      if (entry === undefined) {
        unusable++
        continue
      }
      if (entry.trim().length === 0) {
        c.warnings.push(`${c.prefix} field 'whenToUse[${i}]' is empty.`)
        continue
      }
      usable++
      countChars(`whenToUse[${i}]`, entry, ManifestLimits.whenToUseEntryMaxChars, c)
    }
  }
  // An unusable visibility or whenToUse is already an error; guessing would only add noise.
  const effective = visibility ?? "on-demand"
  if (
    effective !== INVALID &&
    effective !== "silent" &&
    whenToUse !== INVALID &&
    usable === 0 &&
    unusable === 0
  ) {
    c.errors.push(
      `${c.prefix} field 'whenToUse' needs at least one non-empty entry when visibility is '${effective}' (only silent plugins may omit it).`
    )
  }

  c.strings(manifest, "whenNotToUse", "whenNotToUse")

  const tags = c.strings(manifest, "tags", "tags")
  if (tags !== undefined && tags !== INVALID) {
    const seen = new Set<string>()
    for (let i = 0; i < tags.length; i++) {
      const tag = tags[i]
      if (tag === undefined) continue
      if (tag !== tag.toLowerCase()) {
        c.warnings.push(
          `${c.prefix} field 'tags[${i}]' has uppercase letters ('${echo(tag)}'); tags should be lowercase.`
        )
      }
      if (seen.has(tag)) c.warnings.push(`${c.prefix} field 'tags[${i}]' repeats tag '${echo(tag)}'.`)
      seen.add(tag)
    }
  }

  const examples = c.read(manifest, "examples", "examples")
  if (examples !== UNREADABLE && examples !== undefined) {
    if (!Array.isArray(examples)) {
      c.wrongType("examples", "an array", examples)
    } else {
      const known = Array.isArray(toolNames) ? new Set<unknown>(toolNames) : undefined
      const length = c.length(examples, "examples")
      for (let i = 0; i < length; i++) {
        const tool = validateExample(c.read(examples, String(i), `examples[${i}]`), i, c)
        if (known !== undefined && tool !== undefined && !known.has(tool)) {
          c.errors.push(`${c.prefix} example references unknown tool '${echo(tool)}'.`)
        }
      }
    }
  }

  c.unknownKeys(manifest, MANIFEST_KEYS, "")
}
