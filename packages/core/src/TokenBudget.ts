/**
 * What a turn costs in tokens, and a catalog's budget report (docs/spec/token-budget.md):
 * the cost with nothing loaded, what each on-demand plugin adds, the worst case with `k`
 * loaded, the cost if every plugin were bound up front (its tools, prompt and operating guide),
 * and which always-tier plugins to demote to fit a budget.
 *
 * Convention: a tool costs `count(name) + count(description) + count(JSON.stringify(parameters))`
 * — the three things every provider serialises — with no per-tool framing overhead (it differs
 * per provider and is constant per tool). A turn's total is the sum of its parts; the blank
 * lines joining the system prompt's sections are not counted. Boot-time sub-agents are tools
 * like the others (offered by their plugin's visibility); tools a plugin adds per request
 * (`getRequestTools`, `getRequestSubAgents`) are unknown before a request and are counted only
 * when passed as `extra`.
 *
 * Costs are those of a user granted everything a plugin `requires` (`Access.unrestricted`): the
 * most a turn can cost. An always-tier plugin's `operatingGuide` is in its prompt section
 * (`SystemPrompt`), so it counts in every turn's `pluginPrompts`.
 */
import * as Access from "./Access.js"
import * as CallTool from "./CallTool.js"
import * as CodeMode from "./CodeMode.js"
import type { CatalogEntry } from "./internal/catalog/entry.js"
import {
  toolCost as costOfTool,
  DEFAULT_LOAD_BUDGET_TOKENS as DEFAULT_LOAD_BUDGET,
  loadCost
} from "./internal/catalog/loadCost.js"
import type { Catalog } from "./internal/catalog/model.js"
import { alwaysSection } from "./internal/promptSections.js"
import type * as LoadedPlugins from "./LoadedPlugins.js"
import * as Offer from "./Offer.js"
import * as SystemPrompt from "./SystemPrompt.js"
import * as Tier1 from "./Tier1.js"
import type { TokenCounterService } from "./TokenCounter.js"
import type { ToolSpec } from "./ToolSpec.js"

/** Tokens of one tool as providers serialise it (see the module's convention). */
export const toolCost: (counter: TokenCounterService, tool: ToolSpec) => number = costOfTool

/** The default load budget (docs/spec/token-budget.md#the-load-budget): a plugin whose load costs more is not loaded. */
export const DEFAULT_LOAD_BUDGET_TOKENS: number = DEFAULT_LOAD_BUDGET

const sum = (xs: Iterable<number>): number => {
  let s = 0
  for (const x of xs) s += x
  return s
}

/** The cost of one model call, in tokens. */
export interface TurnCost {
  readonly basePrompt: number
  readonly tier1: number
  /** `prompt` sections of always-tier and loaded plugins. */
  readonly pluginPrompts: number
  readonly metaTools: number
  /** Every offered tool except the meta-tools: always-tier, loaded, per-request. */
  readonly toolSchemas: number
  readonly total: number
}

/** The boot-time sub-agents offered for `loadedPlugins`, as the agent loop offers them. */
const subAgentTools = (
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins
): Array<Offer.OfferedTool> =>
  Offer.requestTools(
    catalog,
    loadedPlugins,
    catalog.subAgents.map((s) => Offer.fromRequestTool(s.tool)),
    Access.unrestricted
  )

/** The sub-agent tools of `entry` whose visibility is `visibility` (they inherit their plugin's). */
const subAgentsOf = (entry: CatalogEntry, visibility: "always" | "on-demand"): ReadonlyArray<ToolSpec> =>
  entry.subAgents.filter((s) => s.tool.visibility === visibility).map((s) => s.tool)

/**
 * The cost of a turn: system prompt (base, Tier-1, plugin prompts) plus every offered tool,
 * boot-time sub-agents included.
 */
export const turnCost = (options: {
  readonly catalog: Catalog
  readonly loadedPlugins: LoadedPlugins.LoadedPlugins
  readonly basePrompt: string
  readonly counter: TokenCounterService
  /** Per-request tools offered on this call. */
  readonly extra?: ReadonlyArray<Offer.OfferedTool>
  /** Code mode (`CODE_MODE`): `run_code`, with its API over the offered tools, counts with the meta-tools. */
  readonly codeMode?: CodeMode.Setting | undefined
}): TurnCost => {
  const { catalog, counter } = options
  const basePrompt = counter.count(options.basePrompt)
  const tier1 = counter.count(Tier1.render(catalog))
  const pluginPrompts = sum(
    [
      ...SystemPrompt.alwaysPromptSections(catalog, Access.unrestricted),
      ...SystemPrompt.loadedPromptSections(catalog, options.loadedPlugins, Access.unrestricted)
    ].map(counter.count)
  )
  let metaTools = 0
  let toolSchemas = 0
  const extra = [...subAgentTools(catalog, options.loadedPlugins), ...(options.extra ?? [])]
  const offered = Offer.offer(catalog, options.loadedPlugins, extra, Access.unrestricted)
  for (const tool of [...offered, ...CodeMode.offer(options.codeMode ?? "off", offered)]) {
    if (tool.kind === "meta") metaTools += toolCost(counter, tool)
    else toolSchemas += toolCost(counter, tool)
  }
  return {
    basePrompt,
    tier1,
    pluginPrompts,
    metaTools,
    toolSchemas,
    total: basePrompt + tier1 + pluginPrompts + metaTools + toolSchemas
  }
}

/** What loading one plugin adds to every later turn of the thread. */
export interface PluginLoadCost {
  readonly name: string
  readonly visibility: "always" | "on-demand"
  /** On-demand tools the load binds (boot-time sub-agents included). */
  readonly tools: number
  /**
   * Their schemas plus the plugin's `prompt` section (for an on-demand plugin), plus its
   * `operatingGuide`: the load's ToolMessage carries it, and it stays in the thread's history.
   */
  readonly cost: number
  /** Of `cost`, the operating guide's tokens (0 without one). */
  readonly guide: number
}

/** One always-tier plugin that could be demoted to on-demand. */
export interface Demotion {
  readonly name: string
  /** Tokens the budgeted scenario would save: its Tier-1 line, always-tier tools and prompt. */
  readonly saving: number
}

/** The budget part of a report. */
export interface BudgetCheck {
  readonly budget: number
  readonly nothingLoadedExceeds: boolean
  /** The `loaded` scenario, when one was given. */
  readonly loaded?: {
    readonly plugins: LoadedPlugins.LoadedPlugins
    readonly cost: TurnCost
    readonly exceeds: boolean
  }
  /** Every always-tier plugin with what demoting it alone would save, biggest first. */
  readonly demotions: ReadonlyArray<Demotion>
  /**
   * The fewest of `demotions`, biggest first, that bring the budgeted scenario (`loaded` if
   * given, else nothing loaded) within budget; empty when it already fits.
   */
  readonly demote: ReadonlyArray<string>
  /** The budgeted scenario's total after demoting `demote`. */
  readonly totalAfterDemotion: number
  /** False when even demoting every always-tier plugin does not fit the budget. */
  readonly fits: boolean
}

/** A catalog's budget report. */
export interface BudgetReport {
  readonly counter: string
  readonly nothingLoaded: TurnCost
  /** Every discoverable plugin a load would add tools to, most expensive first. */
  readonly perPlugin: ReadonlyArray<PluginLoadCost>
  readonly worstCase: { readonly k: number; readonly plugins: ReadonlyArray<string>; readonly total: number }
  /**
   * Every plugin bound up front: every non-silent tool, with the base prompt and each
   * discoverable plugin's section as an always-tier plugin's (its `prompt` and its operating
   * guide, cut as the system prompt cuts an always-tier guide), and no Tier-1 block nor
   * meta-tools (nothing left to discover); `saving` is that minus the nothing-loaded turn.
   */
  readonly allBound: { readonly total: number; readonly saving: number }
  readonly budget?: BudgetCheck
}

const promptOf = (entry: CatalogEntry): string | undefined => {
  const p = entry.plugin.prompt
  return typeof p === "string" && p.trim().length > 0 ? p.trim() : undefined
}

const byCostThenName =
  <A extends { readonly name: string }>(cost: (a: A) => number) =>
  (a: A, b: A) =>
    cost(b) - cost(a) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/**
 * The budget report. `k` is how many plugins the worst case loads (the `k` most expensive);
 * with a `budget`, the nothing-loaded turn and the `loaded` scenario are checked against it and
 * the always-tier plugins are ranked by what demoting each to on-demand would save.
 */
export const budgetReport = (
  catalog: Catalog,
  options: {
    readonly basePrompt: string
    readonly counter: TokenCounterService
    readonly k: number
    readonly budget?: number | undefined
    readonly loaded?: LoadedPlugins.LoadedPlugins | undefined
    /** Code mode: each turn also carries `run_code`'s API, and each load its tools' part of it. */
    readonly codeMode?: CodeMode.Setting | undefined
  }
): BudgetReport => {
  const { counter, basePrompt } = options
  const codeMode = options.codeMode ?? "off"
  // Each on-demand tool is priced for its plugin's load and again for the all-bound turn;
  // serialising 15,000 schemas twice is most of a large catalog's report, so price each once.
  const priced = new WeakMap<ToolSpec, number>()
  const costOf = (tool: ToolSpec): number => {
    let n = priced.get(tool)
    if (n === undefined) {
      n = toolCost(counter, tool)
      priced.set(tool, n)
    }
    return n
  }
  const costOfTools = (tools: ReadonlyArray<ToolSpec>) => sum(tools.map(costOf))
  // A plugin bound up front carries its guide in the prompt, as an always-tier plugin does: the
  // baseline that leaves guides out would overstate what discovery saves.
  const boundPromptCost = (e: CatalogEntry) => {
    const p = alwaysSection(e)
    return p === undefined ? 0 : counter.count(p)
  }
  const nothingLoaded = turnCost({ catalog, loadedPlugins: [], basePrompt, counter, codeMode })
  // With code mode, a load also adds its tools' lines to run_code's API.
  const apiCost = (tools: ReadonlyArray<ToolSpec>, plugin: string): number =>
    codeMode === "off" || tools.length === 0
      ? 0
      : counter.count(
          CodeMode.api(CodeMode.callables(tools.map((t) => ({ ...t, kind: "plugin" as const, plugin }))))
        )

  const perPlugin: Array<PluginLoadCost> = []
  for (const e of catalog.entries) {
    const load = loadCost(e, counter, costOf)
    if (load === undefined) continue
    perPlugin.push({
      name: e.name,
      visibility: e.visibility === "always" ? "always" : "on-demand",
      tools: load.tools.length,
      cost: load.cost + apiCost(load.tools, e.name),
      guide: load.guide
    })
  }
  perPlugin.sort(byCostThenName((p) => p.cost))

  const k = Math.max(0, Math.min(Math.floor(options.k), perPlugin.length))
  const worst = perPlugin.slice(0, k)
  const worstCase = {
    k,
    plugins: worst.map((p) => p.name),
    total: nothingLoaded.total + sum(worst.map((p) => p.cost))
  }

  const discoverable = catalog.entries.filter((e) => e.discoverable)
  const allBoundTotal =
    counter.count(basePrompt) +
    sum(discoverable.map(boundPromptCost)) +
    sum(
      discoverable.map((e) =>
        costOfTools([
          ...e.tools.filter((t) => t.visibility !== "silent"),
          ...e.subAgents.map((s) => s.tool).filter((t) => t.visibility !== "silent")
        ])
      )
    )
  const allBound = { total: allBoundTotal, saving: allBoundTotal - nothingLoaded.total }

  const report: BudgetReport = { counter: counter.name, nothingLoaded, perPlugin, worstCase, allBound }
  if (options.budget === undefined) return report
  return {
    ...report,
    budget: checkBudget(catalog, options.budget, options.loaded, basePrompt, counter, nothingLoaded, codeMode)
  }
}

const checkBudget = (
  catalog: Catalog,
  budget: number,
  loaded: LoadedPlugins.LoadedPlugins | undefined,
  basePrompt: string,
  counter: TokenCounterService,
  nothingLoaded: TurnCost,
  codeMode: CodeMode.Setting
): BudgetCheck => {
  const loadedCost =
    loaded === undefined
      ? undefined
      : turnCost({ catalog, loadedPlugins: loaded, basePrompt, counter, codeMode })
  const scenario = loaded ?? []
  const target = loadedCost ?? nothingLoaded
  const always = catalog.entries.filter((e) => e.visibility === "always")
  const loadedSet = new Set(scenario)

  // Demoting p: its line leaves the Tier-1 block; unless the scenario loads p, its tools that
  // inherit the plugin's tier and its prompt leave the turn (tools that say `always` themselves
  // stay always-tier).
  const savingOf = (demoted: ReadonlySet<string>): number => {
    const tier1Before = counter.count(Tier1.render(catalog))
    const tier1After = counter.count(Tier1.renderEntries(catalog.entries.filter((e) => !demoted.has(e.name))))
    let saving = tier1Before - tier1After
    for (const e of always) {
      if (!demoted.has(e.name) || loadedSet.has(e.name)) continue
      saving += sum(
        e.alwaysTools.filter((t) => t.tool.visibility === undefined).map((t) => toolCost(counter, t))
      )
      saving += sum(subAgentsOf(e, "always").map((t) => toolCost(counter, t)))
      const p = promptOf(e)
      if (p !== undefined) saving += counter.count(p)
      // Demoted, its guide leaves the prompt for the load's answer.
      if (e.operatingGuide !== undefined) saving += counter.count(SystemPrompt.boundedGuide(e.operatingGuide))
    }
    return saving
  }

  const demotions = always
    .map((e) => ({ name: e.name, saving: savingOf(new Set([e.name])) }))
    .sort(byCostThenName((d) => d.saving))
  const demote: Array<string> = []
  let totalAfterDemotion = target.total
  for (const d of demotions) {
    if (totalAfterDemotion <= budget) break
    demote.push(d.name)
    totalAfterDemotion = target.total - savingOf(new Set(demote))
  }
  return {
    budget,
    nothingLoadedExceeds: nothingLoaded.total > budget,
    ...(loaded === undefined || loadedCost === undefined
      ? {}
      : { loaded: { plugins: loaded, cost: loadedCost, exceeds: loadedCost.total > budget } }),
    demotions,
    demote,
    totalAfterDemotion,
    fits: totalAfterDemotion <= budget
  }
}

/** What a door's tool list costs, in tokens (`listCost`). */
export interface ListCost {
  /** How many tools are listed. */
  readonly tools: number
  readonly metaTools: number
  /** Every listed tool except the meta-tools. */
  readonly toolSchemas: number
  readonly total: number
}

/**
 * What the list of a door whose client keeps it (the MCP gateway's `tools/list`,
 * `CallTool.offer`) costs for `loadedPlugins`: every listed tool by this module's convention,
 * the three meta-tools included. The gateway lists catalog tools only (no per-request tool, no
 * sub-agent: docs/mcp-gateway.md#what-is-listed).
 */
export const listCost = (
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins,
  counter: TokenCounterService
): ListCost => {
  let metaTools = 0
  let toolSchemas = 0
  const listed = CallTool.offer(catalog, loadedPlugins, Access.unrestricted)
  for (const tool of listed) {
    const cost = listedToolCost(counter, tool)
    if (tool.kind === "meta") metaTools += cost
    else toolSchemas += cost
  }
  return { tools: listed.length, metaTools, toolSchemas, total: metaTools + toolSchemas }
}

/** A tool as the list carries it (`CallTool.listedSchema`), priced by the module's convention. */
const listedToolCost = (counter: TokenCounterService, tool: ToolSpec): number =>
  toolCost(counter, { ...tool, parameters: CallTool.listedSchema(tool.parameters) })

/** What the MCP gateway costs a client (`gatewayCost`). */
export interface GatewayCost {
  /** The server's `instructions` (the Tier-1 block and the always-tier plugins' sections). */
  readonly instructions: number
  /** `tools/list` as a client connects: the meta-tools and the always-tier tools. */
  readonly atConnect: ListCost
  /**
   * `tools/list` after `k` loads: the `k` loadable plugins whose tools add most to the list, most
   * expensive first (fewer when fewer add anything).
   */
  readonly afterLoads: ListCost & { readonly k: number; readonly plugins: ReadonlyArray<string> }
}

/**
 * What the MCP gateway (`plugboard mcp`, docs/mcp-gateway.md) costs a client that mounts it: its
 * instructions, its tool list at connect and after the `k` most expensive loads. A plugin that
 * cannot be loaded (unavailable) is never among them.
 */
export const gatewayCost = (
  catalog: Catalog,
  options: { readonly counter: TokenCounterService; readonly k: number }
): GatewayCost => {
  const { counter } = options
  const atConnect = listCost(catalog, [], counter)
  const base = CallTool.offer(catalog, [], Access.unrestricted)
  const added = catalog.entries
    .filter((e) => e.discoverable && e.unavailable === undefined)
    .map((e) => ({
      name: e.name,
      cost: sum(
        CallTool.offer(catalog, [e.name], Access.unrestricted)
          .slice(base.length)
          .map((t) => listedToolCost(counter, t))
      )
    }))
    .filter((p) => p.cost > 0)
    .sort(byCostThenName((p) => p.cost))
  const k = Math.max(0, Math.min(Math.floor(options.k), added.length))
  const plugins = added.slice(0, k).map((p) => p.name)
  const instructions = counter.count(
    SystemPrompt.compose({ basePrompt: "", catalog, loadedPlugins: [], view: Access.unrestricted })
  )
  return { instructions, atConnect, afterLoads: { k, plugins, ...listCost(catalog, plugins, counter) } }
}

/** Above this many tokens, `plugboard inspect` warns about an operating guide (docs/plugins.md#operating-guides). */
export const GUIDE_WARN_TOKENS = 3_000

/** What one plugin's operating guide costs, and where it is paid. */
export interface GuideCost {
  readonly name: string
  readonly visibility: "always" | "on-demand"
  /** Tokens of the guide as written. */
  readonly tokens: number
  /**
   * `prompt`: an always-tier plugin's, paid on every model call (cut to
   * `SystemPrompt.ALWAYS_GUIDE_MAX_CHARS`); `load`: returned by `load_capability`, paid from then on.
   */
  readonly paid: "prompt" | "load"
  /** Tokens actually paid where it is paid (the cut guide, for `prompt`). */
  readonly paidTokens: number
  /** True when the system prompt carries it cut. */
  readonly cut: boolean
  /** True above `GUIDE_WARN_TOKENS`. */
  readonly overWarning: boolean
}

/**
 * The `[boot-warning]` line of each guide above `GUIDE_WARN_TOKENS`, in `guides`' order
 * (docs/plugins.md#operating-guides): what `plugboard inspect`, the server's boot log and the dev
 * console all print about an oversized guide.
 */
export const guideWarnings = (guides: ReadonlyArray<GuideCost>): ReadonlyArray<string> =>
  guides
    .filter((g) => g.overWarning)
    .map(
      (g) =>
        `[boot-warning] Plugin '${g.name}' operating guide is ${g.tokens.toLocaleString("en-US")} tokens, above ${GUIDE_WARN_TOKENS.toLocaleString("en-US")}: ` +
        (g.paid === "prompt"
          ? `an always-tier plugin's guide is paid on every model call${g.cut ? " (and the prompt carries it cut)" : ""}; shorten it or make the plugin on-demand.`
          : "every thread that loads the plugin pays it from then on; shorten it.")
    )

/** The operating guides of the discoverable plugins, most expensive first. */
export const guideCosts = (catalog: Catalog, counter: TokenCounterService): ReadonlyArray<GuideCost> =>
  catalog.entries
    .filter((e) => e.discoverable && e.operatingGuide !== undefined)
    .map((e): GuideCost => {
      const guide = e.operatingGuide!
      const tokens = counter.count(guide)
      const always = e.visibility === "always"
      const carried = always ? SystemPrompt.boundedGuide(guide) : guide
      return {
        name: e.name,
        visibility: always ? "always" : "on-demand",
        tokens,
        paid: always ? "prompt" : "load",
        paidTokens: carried === guide ? tokens : counter.count(carried),
        cut: carried !== guide,
        overWarning: tokens > GUIDE_WARN_TOKENS
      }
    })
    .sort(byCostThenName((g) => g.tokens))
