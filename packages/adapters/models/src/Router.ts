/**
 * The scripted model's "router" mode: a deterministic offline agent that plays the model's part of
 * the discovery loop (docs/spec/meta-tools.md) from the catalog's manifests alone, so the server
 * demo works with no key and no network. Per user message it ranks plugins with core's
 * `CapabilityIndex`, loads the best one with `load_capability` when its tools are not offered yet,
 * calls the tool of the best-matching manifest example (arguments adapted from the message: words,
 * numbers, currencies and units), then answers with a short summary of the tool's output. Every
 * decision is a pure function of the messages and the offer, so a replayed conversation gets the
 * same replies.
 *
 * Each reply carries the router's reasoning about it (`decide`), which the scripted model exposes
 * as a reasoning provider does: the chosen manifest example's `thought` when it has one,
 * otherwise one sentence stating the decision ("The user asks “…”; the Weather plugin (weather)
 * fits; loading it.").
 */
import type { BaseMessage } from "@langchain/core/messages"
import { AIMessage, ToolMessage } from "@langchain/core/messages"
import type { ManifestExample } from "@plugboard/core"
import { CapabilityIndex, type Catalog } from "@plugboard/core"
import * as Quantities from "./Quantities.js"
import type { Responder, ScriptedAction, ScriptedReply, ScriptedTurn } from "./Script.js"

/** Meta-tool names (docs/spec/meta-tools.md): the runtime registers them, the router calls them. */
const LIST_CAPABILITIES = "list_capabilities"
const LOAD_CAPABILITY = "load_capability"

/**
 * Minimum relevance (core's `CapabilityIndex.rank` → `relevance`: the best plugin's score as a
 * share of the best score the query could reach, in [0, 1)) for the router to act on a plugin.
 * Unlike the raw BM25F score it does not grow with the catalog, so one floor serves a
 * one-plugin catalog and a large one alike. Measured with the reference weather plugin, alone or
 * among others: a query explained only by `whenToUse` trigger words ("Do I need an umbrella
 * today?") reaches 0.20–0.25, a plugin's own name with an unknown city ("weather in Oslo")
 * ~0.4, a manifest example of the 55-plugin examples' catalog at least 0.31; one stray
 * `whenToUse` word among words no plugin uses ("what time is it in a city") 0.10–0.125.
 */
export const DEFAULT_THRESHOLD = 0.15

/** Options of the router. */
export interface RouterOptions {
  readonly catalog: Catalog.Catalog
  /**
   * Minimum `relevance` of the best-ranked plugin for the router to use it (default
   * `DEFAULT_THRESHOLD`); relevance is below 1, so any threshold of 1 or more means "never".
   * Must be a finite number >= 0.
   */
  readonly threshold?: number
}

const ASKS_CAPABILITIES =
  /\b(what can you do|what are you able to do|what (?:capabilities|tools|plugins|skills) do you have|(?:list|show)(?: me)?(?: your| the| all)? (?:capabilities|tools|plugins|skills)|your (?:capabilities|tools|plugins))\b/i
const GREETING = /^\s*(hi|hello|hey|good (morning|afternoon|evening))\b[\s!.,]*$/i

// ---------------------------------------------------------------------------------------------
// Argument adaptation

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
// Summaries

const MAX_SUMMARY = 400
/** Plugins named in an answer about `list_capabilities`; the rest are counted. */
const MAX_LISTED = 10

const clip = (text: string, max = MAX_SUMMARY): string =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const describeValue = (value: unknown): string => {
  if (Array.isArray(value)) return `${value.length} item(s)`
  if (value !== null && typeof value === "object") return `${Object.keys(value).length} field(s)`
  return String(value)
}

/** A one-line summary of a tool's output: top-level fields of a JSON object, or the clipped text. */
export const summariseOutput = (content: string): string => {
  const value = parse(content)
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const fields = Object.entries(value as Record<string, unknown>).slice(0, 10)
    if (fields.length > 0) return clip(fields.map(([k, v]) => `${k}: ${describeValue(v)}`).join(", "))
  }
  if (Array.isArray(value)) return `${value.length} result(s): ${clip(JSON.stringify(value.slice(0, 3)))}`
  return clip(content.trim())
}

/** `name: summary` lines of the plugins found in a `list_capabilities` output, when it lists any. */
const summariseListing = (content: string): string | undefined => {
  const value = parse(content)
  const candidates: Array<unknown> = Array.isArray(value)
    ? value
    : value !== null && typeof value === "object"
      ? (Object.values(value).find(Array.isArray) ?? [])
      : []
  const lines = candidates.flatMap((p) => {
    const { name, summary } = (p ?? {}) as { name?: unknown; summary?: unknown }
    return typeof name === "string" ? [`- ${name}${typeof summary === "string" ? `: ${summary}` : ""}`] : []
  })
  if (lines.length === 0) return undefined
  const total = (value as { total?: unknown }).total
  const more = Math.max(lines.length, typeof total === "number" ? total : 0) - MAX_LISTED
  return more > 0 ? [...lines.slice(0, MAX_LISTED), `…and ${more} more.`].join("\n") : lines.join("\n")
}

// ---------------------------------------------------------------------------------------------
// Routing

interface TurnFacts {
  readonly user: string
  /** Names of the tools called since the user's message, in call order. */
  readonly called: ReadonlyArray<{ readonly name: string; readonly args: Record<string, unknown> }>
  /** Tool results since the last AI message (the ones to answer about). */
  readonly results: ReadonlyArray<{
    readonly name: string
    readonly content: string
    readonly failed: boolean
  }>
}

const facts = (messages: ReadonlyArray<BaseMessage>): TurnFacts | undefined => {
  let u = messages.length - 1
  while (u >= 0 && messages[u]!.type !== "human") u--
  if (u < 0) return undefined
  const names = new Map<string, string>()
  const called: Array<{ name: string; args: Record<string, unknown> }> = []
  let lastAi = u
  for (let i = u + 1; i < messages.length; i++) {
    const m = messages[i]!
    if (AIMessage.isInstance(m)) {
      lastAi = i
      for (const c of m.tool_calls ?? []) {
        if (c.id !== undefined) names.set(c.id, c.name)
        called.push({ name: c.name, args: c.args })
      }
    }
  }
  const results = messages
    .slice(lastAi + 1)
    .filter(ToolMessage.isInstance)
    .map((m) => ({
      name: names.get(m.tool_call_id) ?? m.name ?? "tool",
      content: m.text,
      failed: m.status === "error"
    }))
  return { user: messages[u]!.text, called, results }
}

/** Picks the example of `entry` closest to `user` (most shared index terms; first on ties). */
const bestExample = (examples: ReadonlyArray<ManifestExample>, user: string): ManifestExample | undefined => {
  const terms = new Set(CapabilityIndex.tokenize(user))
  let best: ManifestExample | undefined
  let bestScore = -1
  for (const example of examples) {
    const exampleTerms = new Set(CapabilityIndex.tokenize(example.user))
    let shared = 0
    for (const t of exampleTerms) if (terms.has(t)) shared++
    const score = exampleTerms.size === 0 ? 0 : shared / Math.sqrt(exampleTerms.size)
    if (score > bestScore) {
      best = example
      bestScore = score
    }
  }
  return best
}

const answerAbout = (results: TurnFacts["results"], catalog: Catalog.Catalog): string => {
  const lines = results.map((r) => {
    if (r.name === LIST_CAPABILITIES) {
      const listing = summariseListing(r.content)
      return listing === undefined
        ? `Capabilities: ${summariseOutput(r.content)}`
        : `Here is what I can do:\n${listing}`
    }
    const owner = catalog.toolsByName.get(r.name)
    const title =
      owner === undefined
        ? r.name
        : `${catalog.byName.get(owner.plugin)?.manifest.title ?? owner.plugin} (${r.name})`
    return r.failed
      ? `${title} failed: ${summariseOutput(r.content)}`
      : `Here is what ${title} returned: ${summariseOutput(r.content)}.`
  })
  return lines.join("\n")
}

/** The options' threshold, or a `RangeError` saying what is wrong with it. */
const thresholdOf = (options: RouterOptions): number => {
  const threshold = options.threshold ?? DEFAULT_THRESHOLD
  if (typeof threshold !== "number" || !Number.isFinite(threshold) || threshold < 0)
    throw new RangeError(
      `Router: threshold must be a finite number >= 0 (the minimum relevance: a share of the best score the query could reach), got ${String(threshold)}.`
    )
  return threshold
}

/** One routing decision: what the model replies, and its reasoning about it. */
export interface RouterDecision {
  readonly reply: ScriptedAction
  readonly reasoning: string
}

const MAX_QUOTE = 80

/** The user's message as reasoning quotes it: one line, clipped. */
const quote = (user: string): string => `“${clip(user.replace(/\s+/g, " ").trim(), MAX_QUOTE)}”`

const joinNames = (names: ReadonlyArray<string>): string =>
  names.length <= 1 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`

/** One routing decision with its reasoning; a pure function of the options and the turn. */
export const decide = (options: RouterOptions, turn: ScriptedTurn): RouterDecision => {
  const { catalog } = options
  const f = facts(turn.messages)
  if (f === undefined)
    return {
      reply: "Hello! Ask me anything, or ask what I can do.",
      reasoning: "There is no user message to act on yet; greeting."
    }
  const offered = new Set(turn.offeredTools)

  // A tool answered (other than a load): summarise it. A load falls through to the call it enabled.
  const results = f.results.filter((r) => r.name !== LOAD_CAPABILITY)
  if (results.length > 0) {
    const names = [...new Set(results.map((r) => r.name))]
    const failed = [...new Set(results.filter((r) => r.failed).map((r) => r.name))]
    return {
      reply: answerAbout(results, catalog),
      reasoning:
        failed.length === 0
          ? `${joinNames(names)} answered; summarising the result for the user.`
          : failed.length === names.length
            ? `${joinNames(failed)} failed; telling the user what came back.`
            : `${joinNames(names)} answered, ${joinNames(failed)} with an error; telling the user what came back.`
    }
  }
  const loaded = new Set(
    f.called
      .filter((c) => c.name === LOAD_CAPABILITY)
      .flatMap((c) => (Array.isArray(c.args.names) ? c.args.names : [c.args.name]))
  )

  if (ASKS_CAPABILITIES.test(f.user) && offered.has(LIST_CAPABILITIES))
    return {
      reply: { tool: LIST_CAPABILITIES, args: {} },
      reasoning: `The user asks what I can do; listing my capabilities with ${LIST_CAPABILITIES}.`
    }

  const [best] = CapabilityIndex.rank(CapabilityIndex.forCatalog(catalog), f.user, { limit: 1 })
  const entry = best === undefined ? undefined : catalog.byName.get(best.name)
  const threshold = thresholdOf(options)
  if (best === undefined || entry === undefined || best.relevance < threshold) {
    if (GREETING.test(f.user))
      return {
        reply: "Hello! How can I help? Ask me what I can do to see my capabilities.",
        reasoning: "The user greets me; no capability is needed to answer."
      }
    return {
      reply:
        "I have no capability that fits this request, so I can only answer in general terms. Ask me what I can do to see my capabilities.",
      reasoning:
        best === undefined
          ? `The user asks ${quote(f.user)}; no capability shares a word with it, so I answer in general terms.`
          : `The user asks ${quote(f.user)}; the closest capability, ${best.name}, is too weak a match (relevance ${best.relevance.toFixed(2)}, below ${threshold}), so I answer in general terms.`
    }
  }

  const callable = entry.tools.filter((t) => t.visibility !== "silent")
  const examples = (entry.manifest.examples ?? []).filter((e) => callable.some((t) => t.name === e.tool))
  const example = bestExample(examples, f.user)
  const toolName = example?.tool ?? callable[0]?.name
  const title = entry.manifest.title
  const fits = `The user asks ${quote(f.user)}; the ${title} plugin (${entry.name}) fits`
  if (toolName === undefined)
    return { reply: `${title} has no tool I can call.`, reasoning: `${fits}, but it has no tool I can call.` }
  // The manifest author's own reasoning for this example, when they wrote one.
  const thought = example?.thought?.trim() || undefined

  if (offered.has(toolName)) {
    const args = example === undefined ? {} : adaptArgs(example, f.user)
    return {
      reply: { tool: toolName, args },
      reasoning: thought ?? `${fits}; calling ${toolName} with ${JSON.stringify(args)}.`
    }
  }
  if (offered.has(LOAD_CAPABILITY) && !loaded.has(entry.name)) {
    return {
      reply: { tool: LOAD_CAPABILITY, args: { names: [entry.name] } },
      reasoning:
        thought === undefined
          ? `${fits}; loading it.`
          : `${thought} ${toolName} belongs to ${entry.name}, which is not loaded yet; loading it.`
    }
  }
  return {
    reply: `${title} would answer this, but its tool '${toolName}' is not available to me in this conversation.`,
    reasoning: `${fits}, but ${toolName} is not offered to me and I cannot load ${entry.name} here; saying so.`
  }
}

/** One routing decision (the reply without its reasoning); exported for tests. */
export const route = (options: RouterOptions, turn: ScriptedTurn): ScriptedReply =>
  decide(options, turn).reply

/** The router as a `Responder` for `ScriptedChatModel`: each reply carries its reasoning. */
export const routerResponder = (options: RouterOptions): Responder => {
  thresholdOf(options) // a bad threshold fails when the model is made, not at its first turn
  return (turn) => decide(options, turn)
}
