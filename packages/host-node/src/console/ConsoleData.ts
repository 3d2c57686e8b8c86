/**
 * The dev console's data, computed from the catalog the server booted with (README "Dev
 * console"): the catalog view, the budget report, `list_capabilities`' ranking, and what a model
 * call is offered for a set of loaded plugins. Every figure is core's (`TokenBudget`, `MetaTools`,
 * `RoutingEval` through inspect's `buildReport`); tokens are counted with o200k, as `plugboard
 * inspect` counts by default, so the console and `inspect --json` agree.
 */

import {
  Access,
  type Catalog,
  LoadedPlugins,
  MetaTools,
  RoutingEval,
  TokenBudget,
  type TokenCounter
} from "@plugboard/core"
import { Data, Either } from "effect"
import * as BootReport from "../BootReport.js"
import { buildReport } from "../CatalogReport.js"
import { catalogWarnings, defaultCounter } from "../CatalogWarnings.js"
import type { ConsoleBudget, ConsoleCatalog, ConsoleOffer, ConsolePlugin, ConsoleSearch } from "./Wire.js"

/** A request the console API refuses (a 400), with the message the page shows. */
export class ConsoleInputError extends Data.TaggedError("ConsoleInputError")<{
  readonly reason: "too-many-names" | "not-loadable" | "invalid-query"
  readonly message: string
}> {}

/**
 * The console's view of one booted catalog, as the requesting user's grants see it (
 * docs/plugins.md#requiring-capabilities: a plugin they may not use is listed unavailable with the reason and
 * without its tools, a tool hidden from them is not named); each answer is computed once per
 * view where it cannot change.
 */
export interface ConsoleData {
  readonly catalog: (view: Access.View) => Promise<ConsoleCatalog>
  readonly budget: (view: Access.View) => Promise<ConsoleBudget>
  /** `list_capabilities` with `query` (nothing loaded); an empty query lists every plugin. */
  readonly search: (query: string, view: Access.View) => ConsoleSearch
  /** The offer for `loaded`; an unknown, silent or denied name is a `ConsoleInputError`. */
  readonly offer: (loaded: ReadonlyArray<string>, view: Access.View) => Promise<ConsoleOffer>
}

/** The most names one offer query may carry (a thread loads a handful; this bounds the work). */
export const MAX_LOADED = 200

const belongsTo = (line: string, name: string) => line.includes(`Plugin '${name}'`)

/** The chat's placeholder when no bound plugin of the catalog has an example. */
export const DEFAULT_PLACEHOLDER = "Send a message"

/**
 * The chat's placeholder for `plugins` (as the user's view shows them): the first example of the
 * first `always` plugin, in catalog order, that the user may use. A bound plugin is one the model
 * can act on at once, so the suggestion is something this catalog answers, whatever it holds.
 */
export const placeholder = (plugins: ReadonlyArray<ConsolePlugin>): string => {
  for (const p of plugins) {
    if (p.visibility !== "always" || p.unavailable !== null) continue
    const examples = p.manifest.examples as ReadonlyArray<{ readonly user?: unknown }> | undefined
    const first = examples?.find((e) => typeof e.user === "string" && e.user.trim() !== "")
    if (first !== undefined) return first.user as string
  }
  return DEFAULT_PLACEHOLDER
}

/** The console's data for `catalog`; `basePrompt` is the host's, as every turn gets it. */
export const make = (options: {
  readonly catalog: Catalog.Catalog
  readonly oracleName: string
  readonly basePrompt?: string | undefined
  /** Defaults to o200k (inspect's default), loaded on first use. */
  readonly counter?: TokenCounter.TokenCounterService | undefined
}): ConsoleData => {
  const { catalog } = options
  const basePrompt = options.basePrompt ?? ""
  let counterP: Promise<TokenCounter.TokenCounterService> | undefined
  const counter = () => {
    counterP ??= options.counter !== undefined ? Promise.resolve(options.counter) : defaultCounter()
    return counterP
  }
  // Views are cached per kind of user by Access, so the answers are cached per view.
  const catalogs = new WeakMap<Access.View, Promise<ConsoleCatalog>>()
  const budgets = new WeakMap<Access.View, Promise<ConsoleBudget>>()
  const once = <A>(cache: WeakMap<Access.View, Promise<A>>, view: Access.View, make: () => Promise<A>) => {
    let answer = cache.get(view)
    if (answer === undefined) {
      answer = make()
      cache.set(view, answer)
    }
    return answer
  }

  const buildCatalog = async (view: Access.View): Promise<ConsoleCatalog> => {
    const c = await counter()
    const report = TokenBudget.budgetReport(catalog, { basePrompt, counter: c, k: 0 })
    const loadCost = new Map(report.perPlugin.map((p) => [p.name, p.cost]))
    const shown = (tool: string) => !view.hiddenTools.has(tool)
    // What inspect and the boot log print about the catalog (CatalogWarnings.ts).
    const warnings = catalogWarnings(catalog, c)
    const plugins: Array<ConsolePlugin> = catalog.entries.map((e) => {
      const examples = e.manifest.examples
      return {
        name: e.name,
        title: e.manifest.title,
        visibility: e.visibility,
        source: e.source?.kind ?? "typescript",
        manifest: (examples === undefined
          ? e.manifest
          : { ...e.manifest, examples: Access.shownExamples(view, examples) }) as unknown as Record<
          string,
          unknown
        >,
        warnings: warnings.filter((w) => belongsTo(w, e.name)),
        tools: [...e.tools, ...e.subAgents.map((s) => s.tool)]
          .filter((t) => shown(t.name))
          .map((t) => ({
            name: t.name,
            description: t.description,
            visibility: t.visibility,
            parameters: t.parameters as Record<string, unknown>,
            tokens: TokenBudget.toolCost(c, t)
          })),
        costWhenLoaded: loadCost.get(e.name) ?? null,
        unavailable: view.denied.get(e.name) ?? e.unavailable ?? null
      }
    })
    return {
      oracleName: options.oracleName,
      tokenizer: c.name,
      plugins,
      warnings: warnings.filter((w) => !catalog.entries.some((e) => belongsTo(w, e.name))),
      placeholder: placeholder(plugins)
    }
  }

  const operatorBudget = () =>
    once(budgets, Access.unrestricted, () =>
      counter().then((c) =>
        buildReport(catalog, {
          module: options.oracleName,
          counter: c,
          basePrompt,
          k: RoutingEval.DEFAULT_K,
          budget: undefined,
          loaded: undefined,
          eval: true,
          queries: undefined
        })
      )
    )

  return {
    catalog: (view) => once(catalogs, view, () => buildCatalog(view)),
    // The operator's pricing, shaped for the user as /health/plugins is (BootReport.forView).
    budget: (view) =>
      view.open
        ? operatorBudget()
        : once(budgets, view, () => operatorBudget().then((r) => BootReport.forView(r, view))),
    search: (query, view) => {
      const trimmed = query.trim()
      const result = MetaTools.listCapabilities(
        catalog,
        LoadedPlugins.empty,
        trimmed === "" ? {} : { query: trimmed },
        view
      )
      if (Either.isLeft(result))
        throw new ConsoleInputError({ reason: "invalid-query", message: result.left.message })
      return result.right
    },
    offer: async (loaded, view) => {
      if (loaded.length > MAX_LOADED) {
        throw new ConsoleInputError({
          reason: "too-many-names",
          message: `loaded names at most ${MAX_LOADED} plugins, got ${loaded.length}.`
        })
      }
      const refused = loaded.filter((n) => {
        const entry = catalog.byName.get(n)
        return entry?.discoverable !== true || !Access.allowsPlugin(view, entry)
      })
      if (refused.length > 0) {
        throw new ConsoleInputError({
          reason: "not-loadable",
          message: `loaded names ${refused
            .slice(0, 5)
            .map((n) => `'${n.slice(0, 100)}'`)
            .join(", ")}: not a loadable plugin of this catalog.`
        })
      }
      const loadedPlugins = LoadedPlugins.add(LoadedPlugins.empty, loaded)
      const cost = TokenBudget.turnCost({ catalog, loadedPlugins, basePrompt, counter: await counter() })
      return { loadedPlugins, cost }
    }
  }
}
