/**
 * The scripted model's "router" mode: a deterministic offline agent that plays the model's part of
 * the discovery loop (docs/spec/meta-tools.md), so the server demo, and any agent framework driven
 * through the OpenAI wire (`OpenAiWire.ts`), works with no key and no network. Every decision is a
 * pure function of the messages and the offer, so a replayed conversation gets the same replies.
 *
 * It routes on what it is given:
 * - **a catalog** (`RouterOptions.catalog`, as the oracle server does): per user message it ranks
 *   plugins with core's `CapabilityIndex`, loads the best one with `load_capability` when its
 *   tools are not offered yet, and calls the tool of the best-matching manifest example
 *   (arguments adapted from the message: words, numbers, currencies and units);
 * - **the offered tools alone** (no catalog, or the catalog's plugin can neither be called nor
 *   loaded with this offer): it ranks the offered tools by their names and descriptions, and the
 *   plugins that `load_capability` results in the conversation described; with no tool that fits
 *   and the meta-tools offered, it calls `list_capabilities` with the user's message as `query`,
 *   then `load_capability` on the best plugin listed, then that plugin's tool. Arguments come
 *   from the plugin's manifest example when a load returned one, else from the tool's JSON Schema
 *   (`argsFromSchema`).
 * Once a tool has answered, it replies with a short summary of the output.
 *
 * A request about several entities ("the weather in Berlin, Paris and Rome") is one call per
 * entity (`internal/fanOut.ts`): one program when `run_code` is offered (code mode), else one
 * entity per model call, then a summary of every answer.
 *
 * Each reply carries the router's reasoning about it (`decide`), which the scripted model exposes
 * as a reasoning provider does: the chosen manifest example's `thought` when it has one,
 * otherwise one sentence stating the decision ("The user asks “…”; the Weather plugin (weather)
 * fits; loading it.").
 */
import type { BaseMessage } from "@langchain/core/messages"
import { AIMessage, ToolMessage } from "@langchain/core/messages"
import type { ManifestExample, ToolSpec } from "@plugboard/core"
import { CapabilityIndex, type Catalog, CodeMode } from "@plugboard/core"
import { adaptArgs, argsFromSchema } from "./internal/adaptArgs.js"
import { type Learned, LIST_CAPABILITIES, LOAD_CAPABILITY, learn } from "./internal/conversation.js"
import {
  type EntityList,
  entityList,
  namespaceIn,
  programFor,
  runCodeOf,
  turnFor
} from "./internal/fanOut.js"
import type { Responder, ScriptedAction, ScriptedReply, ScriptedToolCall, ScriptedTurn } from "./Script.js"

export { adaptArgs }

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
  /**
   * The plugins to route over, as the oracle server's router does (loads go straight to the best
   * plugin). Without it the router works from the offered tools and the meta-tools' results
   * alone (discovering with `list_capabilities` first).
   */
  readonly catalog?: Catalog.Catalog | undefined
  /**
   * Minimum `relevance` of the best-ranked plugin or tool for the router to use it (default
   * `DEFAULT_THRESHOLD`); relevance is below 1, so any threshold of 1 or more means "never".
   * Must be a finite number >= 0.
   */
  readonly threshold?: number
}

const ASKS_CAPABILITIES =
  /\b(what can you do|what are you able to do|what (?:capabilities|tools|plugins|skills) do you have|(?:list|show)(?: me)?(?: your| the| all)? (?:capabilities|tools|plugins|skills)|your (?:capabilities|tools|plugins))\b/i
const GREETING = /^\s*(hi|hello|hey|good (morning|afternoon|evening))\b[\s!.,]*$/i

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

const isScalar = (value: unknown): boolean => value === null || typeof value !== "object"

const describeValue = (value: unknown): string => {
  if (Array.isArray(value)) return `${value.length} item(s)`
  if (value !== null && typeof value === "object") {
    // A flat record (one entity's answer in a program's result) is worth reading in full.
    const fields = Object.entries(value as Record<string, unknown>)
    return fields.length > 0 && fields.length <= 8 && fields.every(([, v]) => isScalar(v))
      ? `(${fields.map(([k, v]) => `${k}: ${String(v)}`).join(", ")})`
      : `${fields.length} field(s)`
  }
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
  readonly results: ReadonlyArray<ToolResult>
  /** Every tool result since the user's message. */
  readonly turnResults: ReadonlyArray<ToolResult>
}

interface ToolResult {
  readonly name: string
  readonly content: string
  readonly failed: boolean
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
  const resultsAfter = (from: number) =>
    messages
      .slice(from)
      .filter(ToolMessage.isInstance)
      .map((m) => ({
        name: names.get(m.tool_call_id) ?? m.name ?? "tool",
        content: m.text,
        failed: m.status === "error"
      }))
  return {
    user: messages[u]!.text,
    called,
    results: resultsAfter(lastAi + 1),
    turnResults: resultsAfter(u + 1)
  }
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

/** How an answer names the tool that answered: its plugin's title when known, and the tool. */
const titleOf = (name: string, catalog: Catalog.Catalog | undefined, learned: () => Learned): string => {
  const owner = catalog?.toolsByName.get(name)
  if (owner !== undefined)
    return `${catalog?.byName.get(owner.plugin)?.manifest.title ?? owner.plugin} (${name})`
  for (const p of learned().loaded.values())
    if (p.tools.includes(name)) return `${p.title ?? p.name} (${name})`
  return name
}

const answerAbout = (results: TurnFacts["results"], title: (name: string) => string): string => {
  const lines = results.map((r) => {
    if (r.name === LIST_CAPABILITIES) {
      const listing = summariseListing(r.content)
      return listing === undefined
        ? `Capabilities: ${summariseOutput(r.content)}`
        : `Here is what I can do:\n${listing}`
    }
    return r.failed
      ? `${title(r.name)} failed: ${summariseOutput(r.content)}`
      : `Here is what ${title(r.name)} returned: ${summariseOutput(r.content)}.`
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

const NO_FIT =
  "I have no capability that fits this request, so I can only answer in general terms. Ask me what I can do to see my capabilities."

/** A decision, and whether it acts (calls a tool) or only says something. */
interface Move {
  readonly decision: RouterDecision
  readonly acts: boolean
}

const says = (reply: string, reasoning: string): Move => ({ decision: { reply, reasoning }, acts: false })
const acts = (reply: ScriptedAction, reasoning: string): Move => ({
  decision: { reply, reasoning },
  acts: true
})

/** Plugins loaded by calls since the user's message. */
const loadedThisTurn = (f: TurnFacts): ReadonlySet<unknown> =>
  new Set(
    f.called
      .filter((c) => c.name === LOAD_CAPABILITY)
      .flatMap((c) => (Array.isArray(c.args.names) ? c.args.names : [c.args.name]))
  )

/** The catalog's move: its best plugin's tool when offered, else a load of that plugin. */
const byCatalog = (
  catalog: Catalog.Catalog,
  f: TurnFacts,
  offered: ReadonlySet<string>,
  threshold: number
): Move => {
  const [best] = CapabilityIndex.rank(CapabilityIndex.forCatalog(catalog), f.user, { limit: 1 })
  const entry = best === undefined ? undefined : catalog.byName.get(best.name)
  if (best === undefined || entry === undefined || best.relevance < threshold) {
    return says(
      NO_FIT,
      best === undefined
        ? `The user asks ${quote(f.user)}; no capability shares a word with it, so I answer in general terms.`
        : `The user asks ${quote(f.user)}; the closest capability, ${best.name}, is too weak a match (relevance ${best.relevance.toFixed(2)}, below ${threshold}), so I answer in general terms.`
    )
  }

  const callable = entry.tools.filter((t) => t.visibility !== "silent")
  const examples = (entry.manifest.examples ?? []).filter((e) => callable.some((t) => t.name === e.tool))
  const example = bestExample(examples, f.user)
  // With no example (a derived MCP or skill manifest), the tool that fits the message best, called
  // with arguments from its schema: never the first tool with `{}` (issue 36, item 19).
  const tool =
    callable.find((t) => t.name === example?.tool) ??
    (callable.length === 1 ? callable[0] : bestTool(callable, f.user))
  const toolName = tool?.name
  const title = entry.manifest.title
  const fits = `The user asks ${quote(f.user)}; the ${title} plugin (${entry.name}) fits`
  if (toolName === undefined)
    return says(`${title} has no tool I can call.`, `${fits}, but it has no tool I can call.`)
  // The manifest author's own reasoning for this example, when they wrote one.
  const thought = example?.thought?.trim() || undefined

  if (offered.has(toolName)) {
    const args =
      example?.tool === toolName ? adaptArgs(example, f.user) : argsFromSchema(tool!.parameters, f.user)
    return acts(
      { tool: toolName, args },
      thought ?? `${fits}; calling ${toolName} with ${JSON.stringify(args)}.`
    )
  }
  if (offered.has(LOAD_CAPABILITY) && !loadedThisTurn(f).has(entry.name)) {
    return acts(
      { tool: LOAD_CAPABILITY, args: { names: [entry.name] } },
      thought === undefined
        ? `${fits}; loading it.`
        : `${thought} ${toolName} belongs to ${entry.name}, which is not loaded yet; loading it.`
    )
  }
  return says(
    `${title} would answer this, but its tool '${toolName}' is not available to me in this conversation.`,
    `${fits}, but ${toolName} is not offered to me and I cannot load ${entry.name} here; saying so.`
  )
}

/** Something the router can pick from the offer: a loaded plugin's tools, or one lone tool. */
interface Candidate {
  readonly document: CapabilityIndex.CapabilityDocument
  readonly title: string
  readonly tools: ReadonlyArray<ToolSpec.ToolSpec>
  readonly examples: ReadonlyArray<ManifestExample>
}

/** The best of `documents` for `user` at `threshold` or above, when one is. */
const bestOf = (
  documents: ReadonlyArray<CapabilityIndex.CapabilityDocument>,
  user: string,
  threshold: number
): CapabilityIndex.Ranked | undefined => {
  if (documents.length === 0) return undefined
  const [best] = CapabilityIndex.rank(CapabilityIndex.make(documents), user, { limit: 1 })
  return best === undefined || best.relevance < threshold ? undefined : best
}

/** A lone tool as the index ranks it: its name, and its description as the summary. */
const toolDocument = (t: ToolSpec.ToolSpec): CapabilityIndex.CapabilityDocument => ({
  name: t.name,
  summary: t.description
})

/** Of a plugin's tools, the one whose name and description fit `user` best; else the first. */
const bestTool = <T extends ToolSpec.ToolSpec>(tools: ReadonlyArray<T>, user: string): T | undefined =>
  tools.find((t) => t.name === bestOf(tools.map(toolDocument), user, 0)?.name) ?? tools[0]

/**
 * The offered tools' move: the best-fitting offered tool (grouped by the plugin a load described,
 * when one did), called with its plugin's adapted example or arguments from its schema. With
 * `discover`, when no offered tool fits: `load_capability` on the best plugin a listing showed,
 * else `list_capabilities` with the user's message as `query`. `foreign` keeps only tools the
 * catalog does not know (the catalog has already decided about its own).
 */
const byTools = (
  turn: ScriptedTurn,
  f: TurnFacts,
  learn: () => Learned,
  threshold: number,
  options: { readonly discover: boolean; readonly foreign?: Catalog.Catalog | undefined }
): Move | undefined => {
  const isDomain = (name: string) =>
    name !== LIST_CAPABILITIES && name !== LOAD_CAPABILITY && !options.foreign?.toolsByName.has(name)
  // By name first: with a catalog and no tool of the client's own, there is nothing to read.
  if (!options.discover && !turn.offeredTools.some(isDomain)) return undefined
  const learned = learn()
  const offered = turn.tools ?? turn.offeredTools.map((name) => ({ name, description: "", parameters: {} }))
  const domain = offered.filter((t) => isDomain(t.name))
  const byName = new Map(domain.map((t) => [t.name, t]))
  const candidates = new Map<string, Candidate>()
  const claimed = new Set<string>()
  for (const p of learned.loaded.values()) {
    const tools = p.tools.flatMap((name) => byName.get(name) ?? [])
    if (tools.length === 0) continue
    for (const t of tools) claimed.add(t.name)
    candidates.set(p.name, {
      document: {
        name: p.name,
        title: p.title,
        summary: p.summary,
        whenToUse: p.whenToUse,
        tags: p.tags,
        examples: p.examples.map((e) => e.user)
      },
      title: `the ${p.title ?? p.name} plugin (${p.name})`,
      tools,
      examples: p.examples.filter((e) => tools.some((t) => t.name === e.tool))
    })
  }
  for (const t of domain)
    if (!claimed.has(t.name) && !candidates.has(t.name))
      candidates.set(t.name, {
        document: toolDocument(t),
        title: `the tool ${t.name}`,
        tools: [t],
        examples: []
      })

  const best = bestOf(
    [...candidates.values()].map((c) => c.document),
    f.user,
    threshold
  )
  const chosen = best === undefined ? undefined : candidates.get(best.name)
  if (chosen !== undefined) {
    const fits = `The user asks ${quote(f.user)}; ${chosen.title} fits`
    const example = bestExample(chosen.examples, f.user)
    const tool =
      chosen.tools.find((t) => t.name === example?.tool) ??
      (chosen.tools.length === 1 ? chosen.tools[0]! : bestTool(chosen.tools, f.user))
    if (tool !== undefined) {
      const args =
        example?.tool === tool.name ? adaptArgs(example, f.user) : argsFromSchema(tool.parameters, f.user)
      const thought = example?.tool === tool.name ? example.thought?.trim() || undefined : undefined
      return acts(
        { tool: tool.name, args },
        thought ?? `${fits}; calling ${tool.name} with ${JSON.stringify(args)}.`
      )
    }
  }
  if (!options.discover) return undefined

  const names = new Set(offered.map((t) => t.name))
  const listed = [...learned.listed.values()].filter((p) => p.unavailable === undefined)
  const plugin = bestOf(
    listed.map((p) => ({ name: p.name, title: p.title, summary: p.summary, tags: p.tags })),
    f.user,
    threshold
  )
  if (plugin !== undefined) {
    const fits = `The user asks ${quote(f.user)}; the listed plugin ${plugin.name} fits`
    if (names.has(LOAD_CAPABILITY) && !loadedThisTurn(f).has(plugin.name) && !learned.loaded.has(plugin.name))
      return acts({ tool: LOAD_CAPABILITY, args: { names: [plugin.name] } }, `${fits}; loading it.`)
    return says(
      `${plugin.name} would answer this, but none of its tools is available to me in this conversation.`,
      `${fits}, but none of its tools is offered to me and I cannot load it again; saying so.`
    )
  }
  if (names.has(LIST_CAPABILITIES) && !f.called.some((c) => c.name === LIST_CAPABILITIES))
    return acts(
      { tool: LIST_CAPABILITIES, args: { query: f.user } },
      `The user asks ${quote(f.user)}; no tool I have fits, so I look for a plugin that does with ${LIST_CAPABILITIES}.`
    )
  return undefined
}

const singleCall = (reply: ScriptedReply): ScriptedToolCall | undefined => {
  if (typeof reply !== "object" || reply instanceof Error || Array.isArray(reply)) return undefined
  const action = "reply" in reply ? reply.reply : reply
  return typeof action === "object" && !Array.isArray(action) ? (action as ScriptedToolCall) : undefined
}

const sameArgs = (a: unknown, b: unknown): boolean => JSON.stringify(a ?? {}) === JSON.stringify(b ?? {})

/**
 * A request about several entities (`internal/fanOut.ts`): a load first when the tool needs one,
 * then one program over every entity when `run_code` is offered, else one entity's call per model
 * call and, once each entity has its answer, an answer about all of them. `undefined` when the
 * entities do not all take the same tool (the request is routed as one).
 */
const fanOutDecision = (
  options: RouterOptions,
  turn: ScriptedTurn,
  f: TurnFacts,
  list: EntityList,
  title: (name: string) => string
): RouterDecision | undefined => {
  // A program answered: the ordinary answer about its result.
  if (f.called.some((c) => c.name === CodeMode.RUN_CODE)) return undefined
  const each = list.items.map((item) => ({ item, decision: decideOne(options, turnFor(turn, list, item)) }))
  const firstCall = singleCall(each[0]!.decision.reply)
  if (firstCall?.tool === LOAD_CAPABILITY) return each[0]!.decision
  const calls = each.flatMap(({ item, decision }) => {
    const call = singleCall(decision.reply)
    return call === undefined ? [] : [{ item, call }]
  })
  const tool = calls[0]?.call.tool
  if (calls.length !== list.items.length || tool === undefined || calls.some((c) => c.call.tool !== tool))
    return undefined
  const entities = joinNames(list.items)
  const api = runCodeOf(turn)
  const namespace = api === undefined ? undefined : namespaceIn(api, tool)
  if (namespace !== undefined && !f.called.some((c) => c.name === tool)) {
    return {
      reply: { tool: CodeMode.RUN_CODE, args: { code: programFor(namespace, calls) } },
      reasoning: `The user asks about ${entities}: ${list.items.length} calls of ${tool}; one program makes them all and returns the answers.`
    }
  }
  const next = calls.find(({ call }) => !f.called.some((c) => c.name === tool && sameArgs(c.args, call.args)))
  if (next !== undefined) {
    const done = calls.indexOf(next)
    return {
      reply: next.call,
      reasoning: `The user asks about ${entities}; ${done} of ${calls.length} answered, calling ${tool} for ${next.item}.`
    }
  }
  const results = f.turnResults.filter((r) => r.name === tool)
  return {
    reply: answerAbout(results, title),
    reasoning: `${tool} answered for ${entities}; summarising the results for the user.`
  }
}

/** One routing decision with its reasoning; a pure function of the options and the turn. */
export const decide = (options: RouterOptions, turn: ScriptedTurn): RouterDecision => {
  const f = facts(turn.messages)
  const list = f === undefined ? undefined : entityList(f.user)
  if (f !== undefined && list !== undefined) {
    let known: Learned | undefined
    const title = (name: string) =>
      titleOf(name, options.catalog, () => {
        known ??= learn(turn.messages)
        return known
      })
    const fanned = fanOutDecision(options, turn, f, list, title)
    if (fanned !== undefined) return fanned
  }
  return decideOne(options, turn)
}

/** One routing decision for a request about one thing (see the module doc). */
const decideOne = (options: RouterOptions, turn: ScriptedTurn): RouterDecision => {
  const { catalog } = options
  const f = facts(turn.messages)
  if (f === undefined)
    return {
      reply: "Hello! Ask me anything, or ask what I can do.",
      reasoning: "There is no user message to act on yet; greeting."
    }
  // Read only when needed: the catalog router, on the server's every call, never is.
  let known: Learned | undefined
  const learned = () => {
    known ??= learn(turn.messages)
    return known
  }
  const asks = ASKS_CAPABILITIES.test(f.user)

  // A tool answered: summarise it. A load falls through to the call it enabled, and so does a
  // listing the user did not ask for (the router's own discovery).
  const results = f.results.filter(
    (r) => r.name !== LOAD_CAPABILITY && (asks || r.name !== LIST_CAPABILITIES)
  )
  if (results.length > 0) {
    const names = [...new Set(results.map((r) => r.name))]
    const failed = [...new Set(results.filter((r) => r.failed).map((r) => r.name))]
    return {
      reply: answerAbout(results, (name) => titleOf(name, catalog, learned)),
      reasoning:
        failed.length === 0
          ? `${joinNames(names)} answered; summarising the result for the user.`
          : failed.length === names.length
            ? `${joinNames(failed)} failed; telling the user what came back.`
            : `${joinNames(names)} answered, ${joinNames(failed)} with an error; telling the user what came back.`
    }
  }

  const offered = new Set(turn.offeredTools)
  if (asks && offered.has(LIST_CAPABILITIES))
    return {
      reply: { tool: LIST_CAPABILITIES, args: {} },
      reasoning: `The user asks what I can do; listing my capabilities with ${LIST_CAPABILITIES}.`
    }

  const threshold = thresholdOf(options)
  const fromCatalog = catalog === undefined ? undefined : byCatalog(catalog, f, offered, threshold)
  if (fromCatalog?.acts === true) return fromCatalog.decision
  const greets = GREETING.test(f.user)
  // A greeting needs no discovery; with a catalog, the catalog has already looked.
  const fromTools = byTools(turn, f, learned, threshold, {
    discover: catalog === undefined && !greets,
    foreign: catalog
  })
  if (fromTools !== undefined) return fromTools.decision
  if (greets && (fromCatalog === undefined || fromCatalog.decision.reply === NO_FIT))
    return {
      reply: "Hello! How can I help? Ask me what I can do to see my capabilities.",
      reasoning: "The user greets me; no capability is needed to answer."
    }
  return (
    fromCatalog?.decision ?? {
      reply: NO_FIT,
      reasoning: `The user asks ${quote(f.user)}; none of the tools I am offered fits it, so I answer in general terms.`
    }
  )
}

/** One routing decision (the reply without its reasoning); exported for tests. */
export const route = (options: RouterOptions, turn: ScriptedTurn): ScriptedReply =>
  decide(options, turn).reply

/** The router as a `Responder` for `ScriptedChatModel`: each reply carries its reasoning. */
export const routerResponder = (options: RouterOptions = {}): Responder => {
  thresholdOf(options) // a bad threshold fails when the model is made, not at its first turn
  return (turn) => decide(options, turn)
}
