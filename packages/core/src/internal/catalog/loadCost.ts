/**
 * What loading one plugin adds to every later model call of a thread, in tokens, and the load
 * budget that bounds it (docs/spec/token-budget.md#the-load-budget). One rule for the budget
 * report (`TokenBudget.budgetReport`'s `perPlugin`) and for the catalog's boot check (`make`),
 * so what `plugboard inspect` prices is what boot refuses.
 */
import type { TokenCounterService } from "../../TokenCounter.js"
import type { ToolSpec } from "../../ToolSpec.js"
import type { CatalogEntry } from "./entry.js"

/**
 * The default load budget: 50,000 tokens, a quarter of a 200,000-token window. Real servers fit
 * it with room to spare (GitHub's 90-odd tools cost about 20,000); a generated wrapper of
 * thousands of tools does not, and must be narrowed (`tools.allow`) to be loaded.
 */
export const DEFAULT_LOAD_BUDGET_TOKENS = 50_000

/** Tokens of one tool as providers serialise it (docs/spec/token-budget.md). */
export const toolCost = (counter: TokenCounterService, tool: ToolSpec): number =>
  counter.count(tool.name) + counter.count(tool.description) + counter.count(JSON.stringify(tool.parameters))

/** What a load of `entry` binds and costs; `undefined` for a plugin no load adds tools to. */
export interface LoadCost {
  /** On-demand tools the load binds (boot-time sub-agents included). */
  readonly tools: ReadonlyArray<ToolSpec>
  /** Their schemas, plus an on-demand plugin's `prompt` section and `operatingGuide`. */
  readonly cost: number
  /** Of `cost`, the operating guide's tokens. */
  readonly guide: number
}

/**
 * The cost of loading `entry` (`costOf` prices one tool, so a caller pricing many plugins can
 * memoise it). An always plugin's prompt and guide are paid already, in its system prompt
 * section: loading it adds only its on-demand tools.
 */
export const loadCost = (
  entry: CatalogEntry,
  counter: TokenCounterService,
  costOf: (tool: ToolSpec) => number = (tool) => toolCost(counter, tool)
): LoadCost | undefined => {
  const tools = [
    ...entry.onDemandTools,
    ...entry.subAgents.filter((s) => s.tool.visibility === "on-demand").map((s) => s.tool)
  ]
  if (!entry.discoverable || (entry.visibility === "always" && tools.length === 0)) return undefined
  let cost = 0
  for (const tool of tools) cost += costOf(tool)
  if (entry.visibility === "always") return { tools, cost, guide: 0 }
  const prompt = typeof entry.plugin.prompt === "string" ? entry.plugin.prompt.trim() : ""
  const guide = entry.operatingGuide === undefined ? 0 : counter.count(entry.operatingGuide)
  return { tools, cost: cost + (prompt === "" ? 0 : counter.count(prompt)) + guide, guide }
}

/**
 * Why a plugin over the budget cannot be loaded, as the model and the operator read it
 * (`CatalogEntry.unavailable`, so `list_capabilities` and `load_capability` say it too).
 */
export const overBudgetReason = (cost: LoadCost, budget: number): string =>
  `loading its ${cost.tools.length.toLocaleString("en-US")} tools would add about ${cost.cost.toLocaleString("en-US")} tokens to every later model call, over the load budget of ${budget.toLocaleString("en-US")} (LOAD_BUDGET_TOKENS).`
