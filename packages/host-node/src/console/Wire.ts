/**
 * What the dev console's read-only API answers (docs/console.md), shared by the server and
 * the page's code (`console-ui/`, type imports only). Every figure in it comes from core:
 * `TokenBudget`, `MetaTools.listCapabilities`, `RoutingEval`; the server only shapes.
 */
import type { MetaTools, TokenBudget, ToolSpec } from "@plugboard/core"
import type { InspectReport } from "../CatalogReport.js"

/** One tool of a plugin, as the model is offered it (its spec), with its tier and its price. */
export interface ConsoleTool extends ToolSpec.ToolSpec {
  /** Prefixed `[<manifest.title>] `, as offered. */
  readonly description: string
  readonly visibility: "always" | "on-demand" | "silent"
  /** Tokens it costs on every model call it is offered on (`TokenBudget.toolCost`). */
  readonly tokens: number
}

/** One plugin of the catalog. */
export interface ConsolePlugin {
  readonly name: string
  readonly title: string
  readonly visibility: "always" | "on-demand" | "silent"
  readonly source: "typescript" | "mcp" | "skill"
  readonly manifest: Readonly<Record<string, unknown>>
  /** The catalog's `[boot-warning]` lines about this plugin. */
  readonly warnings: ReadonlyArray<string>
  readonly tools: ReadonlyArray<ConsoleTool>
  /** What loading it adds (`TokenBudget.PluginLoadCost.cost`); null when a load adds nothing. */
  readonly costWhenLoaded: number | null
  readonly unavailable: string | null
}

/** `GET /console/api/catalog`. */
export interface ConsoleCatalog {
  readonly oracleName: string
  readonly tokenizer: string
  readonly plugins: ReadonlyArray<ConsolePlugin>
  /** Lines of the catalog's warnings that name no single plugin. */
  readonly warnings: ReadonlyArray<string>
  /**
   * What the chat's message box suggests (`placeholder` in ConsoleData.ts): a request this
   * catalog answers with no load — the first manifest example of its first `always` plugin the
   * user may use — else `DEFAULT_PLACEHOLDER`.
   */
  readonly placeholder: string
}

/** `GET /console/api/search?query=`: `list_capabilities`' own result for the query. */
export type ConsoleSearch = MetaTools.ListCapabilitiesResult

/** `GET /console/api/offer?loaded=a,b` and `GET /console/api/sessions/:id`. */
export interface ConsoleOffer {
  /** The thread's `loadedPlugins`, in load order. */
  readonly loadedPlugins: ReadonlyArray<string>
  /** Tokens a model call is offered with them loaded (`TokenBudget.turnCost`). */
  readonly cost: TokenBudget.TurnCost
}

/** `GET /console/api/budget`: the report `plugboard inspect --json --eval` prints. */
export type ConsoleBudget = InspectReport
