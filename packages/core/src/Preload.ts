/**
 * Predictive preload (docs/spec/tiers.md#predictive-preload): before a turn's first model call,
 * the plugins are ranked against the user's message by the host's ranking (`Ranking`, the one
 * `list_capabilities` uses: lexical, or fused with an embedder); when the ranking is confident, the top plugin's on-demand tools are
 * offered for that turn only. They come after everything else the call is offered
 * (`Offer.preloadTools`), so the prefix a provider caches is the one a turn without preload
 * sends, and the plugin does not join `loadedPlugins`: the next turn decides afresh.
 *
 * Modes: `off` ranks nothing; `shadow` ranks and reports what it would have preloaded, and
 * whether the model then used that plugin (`agreement`), without changing the offer; `on`
 * offers the tools.
 *
 * Confidence is the top plugin's `relevance` times its margin over the runner-up
 * (`1 - score₂ / score₁`): relevance alone trusts a query that matches several plugins equally
 * well, the margin alone trusts a query that matches one plugin by a single common word. Both
 * factors mean the same in a small catalog as in a large one. With a fused ranking the margin is
 * taken on the fused scores and the relevance stays the lexical one: a plugin the embedder alone
 * finds is named, but not preloaded. Pure: no I/O (a fused ranking's embedder is an `Effect`).
 */

import { Effect } from "effect"
import type * as Access from "./Access.js"
import * as CapabilityIndex from "./CapabilityIndex.js"
import type { EmbedderError } from "./Embedder.js"
import type { Catalog } from "./internal/catalog/model.js"
import * as LoadedPlugins from "./LoadedPlugins.js"
import * as MetaTools from "./MetaTools.js"
import * as Offer from "./Offer.js"
import type * as Ranking from "./Ranking.js"

/** `off`: nothing ranked; `shadow`: ranked and reported, the offer unchanged; `on`: preloaded. */
export type Mode = "off" | "shadow" | "on"

/** Every mode, in the order the configuration lists them. */
export const modes: ReadonlyArray<Mode> = ["off", "shadow", "on"]

/** Whether `value` names a mode. */
export const isMode = (value: unknown): value is Mode => modes.includes(value as Mode)

/**
 * The confidence a prediction needs to be acted on. Chosen on MetaTool's dev split
 * (`pnpm bench ranking`, docs/benchmarks.md#routing-quality): the largest share of turns preloaded while
 * at least 9 in 10 preloads name the plugin the query is labelled with, fitted on one half of
 * the queries and checked on the other. A wrong preload costs its tool schemas on each call of
 * the turn and may tempt the model; a right one saves the `load_capability` round trip.
 */
export const DEFAULT_THRESHOLD = 0.12

/** What the ranking predicts for a message. */
export interface Prediction {
  /** The top-ranked plugin. */
  readonly plugin: string
  /** `relevance × margin`, in [0, 1). */
  readonly confidence: number
  /** The top plugin's lexical `CapabilityIndex` relevance. */
  readonly relevance: number
  /** `1 - score₂ / score₁` in the ranking's scores: 1 when no other plugin is ranked. */
  readonly margin: number
}

/** Options of `decide`. */
export interface Options {
  readonly mode: Mode
  /** Least confidence acted on; `DEFAULT_THRESHOLD` when absent. In [0, 1]. */
  readonly threshold?: number | undefined
  /**
   * Whether this user may use a plugin (the host's access rule): a plugin the user cannot load
   * is never preloaded. Every plugin when absent.
   */
  readonly available?: ((plugin: string) => boolean) | undefined
  /**
   * The message's ranking computed beforehand by the host's ranking (`Ranking.rank`, at least its
   * first two plugins; `decideWith` computes it): the ranking `list_capabilities` uses. When
   * absent, the message is ranked lexically (`CapabilityIndex`).
   */
  readonly ranked?: ReadonlyArray<Ranking.Ranked> | undefined
}

/** Why a turn preloads nothing, or `preloaded`. */
export type Reason =
  /** The mode is `off`. */
  | "off"
  /** The ranking ranked no plugin (lexically: none shares a word with the message). */
  | "no-match"
  /** The top plugin's confidence is below the threshold. */
  | "not-confident"
  /** The top plugin's tools are already offered (it is loaded, or `always`). */
  | "already-offered"
  /** The user may not use the top plugin. */
  | "unavailable"
  /** Confident, but the mode is `shadow`: reported, not offered. */
  | "shadow"
  /** Its tools are offered this turn. */
  | "preloaded"

/** The decision for one turn. */
export interface Decision {
  readonly mode: Mode
  readonly threshold: number
  /** Absent when the mode is `off` or nothing matched. */
  readonly prediction?: Prediction | undefined
  readonly reason: Reason
  /** Plugins whose on-demand tools this turn is offered on top of its loaded plugins (`on` only). */
  readonly preloaded: ReadonlyArray<string>
}

/**
 * A threshold that is not a number in [0, 1]. It stays a `RangeError` with its own `_tag`, not a
 * `Data.TaggedError`: it reports a caller's bug, which every argument check of the project throws
 * as a `RangeError` (callers may test `instanceof RangeError`), and a tagged error cannot extend it.
 */
export class InvalidThreshold extends RangeError {
  readonly _tag = "InvalidThreshold"
  constructor(readonly threshold: unknown) {
    super(`Preload threshold must be a number between 0 and 1; got ${String(threshold)}.`)
    this.name = "InvalidThreshold"
  }
}

/** The threshold of `options`, checked: throws `InvalidThreshold` when out of [0, 1]. */
export const thresholdOf = (options: Pick<Options, "threshold">): number => {
  const t = options.threshold ?? DEFAULT_THRESHOLD
  if (typeof t !== "number" || !Number.isFinite(t) || t < 0 || t > 1) throw new InvalidThreshold(t)
  return t
}

/**
 * The prediction of a ranking computed beforehand (best first; only its first two plugins are
 * read), whatever its confidence; absent when it ranked nothing.
 */
export const predictFrom = (ranked: ReadonlyArray<Ranking.Ranked>): Prediction | undefined => {
  const [first, second] = ranked
  if (first === undefined) return undefined
  const margin =
    second === undefined || first.score <= 0 ? 1 : Math.max(0, Math.min(1, 1 - second.score / first.score))
  return { plugin: first.name, confidence: first.relevance * margin, relevance: first.relevance, margin }
}

/** The lexical ranking's prediction for `message`, whatever its confidence; absent when nothing matched. */
export const predict = (index: CapabilityIndex.CapabilityIndex, message: string): Prediction | undefined =>
  predictFrom(CapabilityIndex.rank(index, message, { limit: 2 }))

/**
 * The decision for a turn whose user message is `message`, with `loaded` the thread's
 * `loadedPlugins` as the turn begins. Only discoverable plugins are ranked (a silent plugin is
 * never predicted). Throws `InvalidThreshold` for a threshold outside [0, 1].
 */
export const decide = (
  catalog: Catalog,
  loaded: LoadedPlugins.LoadedPlugins,
  message: string,
  options: Options
): Decision => {
  const threshold = thresholdOf(options)
  const none = (reason: Reason, prediction?: Prediction): Decision => ({
    mode: options.mode,
    threshold,
    prediction,
    reason,
    preloaded: []
  })
  if (options.mode === "off") return none("off")
  const prediction =
    options.ranked === undefined
      ? predict(CapabilityIndex.forCatalog(catalog), message)
      : predictFrom(options.ranked)
  if (prediction === undefined) return none("no-match")
  if (prediction.confidence < threshold) return none("not-confident", prediction)
  const entry = catalog.byName.get(prediction.plugin)
  if (entry === undefined || entry.visibility === "always" || LoadedPlugins.has(loaded, entry.name)) {
    return none("already-offered", prediction)
  }
  if (options.available !== undefined && !options.available(entry.name)) {
    return none("unavailable", prediction)
  }
  if (options.mode === "shadow") return none("shadow", prediction)
  return { mode: options.mode, threshold, prediction, reason: "preloaded", preloaded: [entry.name] }
}

/**
 * `decide` with the message ranked by `ranking` (the host's, the one `list_capabilities` uses):
 * nothing is ranked when the mode is `off`. Fails with the embedder's error when a fused ranking
 * cannot embed the message; the caller chooses what a turn does then.
 */
export const decideWith = (
  ranking: Ranking.Ranking,
  catalog: Catalog,
  loaded: LoadedPlugins.LoadedPlugins,
  message: string,
  options: Omit<Options, "ranked">
): Effect.Effect<Decision, EmbedderError> => {
  // Off, or a ranking that answers at once: `decideNow`'s decision, the same one.
  const now = decideNow(ranking, catalog, loaded, message, options)
  if (now !== undefined) return Effect.succeed(now)
  return Effect.map(ranking.rank(message, { limit: 2 }), (ranked) =>
    decide(catalog, loaded, message, { ...options, ranked })
  )
}

/**
 * `decideWith`'s decision at once, for a ranking that ranks synchronously (`Ranking.rankNow`, the
 * lexical one): the same decision, without running an Effect on every turn. `undefined` for a
 * ranking that must wait (a fused one embeds the message): decide that one with `decideWith`.
 */
export const decideNow = (
  ranking: Ranking.Ranking,
  catalog: Catalog,
  loaded: LoadedPlugins.LoadedPlugins,
  message: string,
  options: Omit<Options, "ranked">
): Decision | undefined => {
  thresholdOf(options)
  if (options.mode === "off") return decide(catalog, loaded, message, options)
  if (ranking.rankNow === undefined) return undefined
  return decide(catalog, loaded, message, { ...options, ranked: ranking.rankNow(message, { limit: 2 }) })
}

/**
 * The tools a decision adds to each model call of its turn (`Offer.preloadTools`), as the user's
 * `view` allows (pass the view the rest of the offer uses).
 */
export const tools = (
  catalog: Catalog,
  loaded: LoadedPlugins.LoadedPlugins,
  decision: Decision | undefined,
  view?: Access.View
): ReadonlyArray<Offer.OfferedTool> =>
  decision === undefined || decision.preloaded.length === 0
    ? []
    : Offer.preloadTools(catalog, loaded, decision.preloaded, view)

/**
 * How a turn's prediction compared with what the model did:
 * - `agreed`: the model loaded the predicted plugin, or called one of its preloaded tools;
 * - `disagreed`: the model loaded or used other plugins, not the predicted one;
 * - `no-load`: the model neither loaded a plugin nor used a preloaded one;
 * - `no-prediction`: nothing was predicted confidently (or it was already offered), whatever the
 *   model did.
 */
export type AgreementKind = "agreed" | "disagreed" | "no-load" | "no-prediction"

/** What shadow (and on) mode reports at a turn's end. */
export interface Agreement {
  readonly kind: AgreementKind
  readonly mode: Mode
  readonly reason: Reason
  /** The top-ranked plugin and its confidence, whether or not it was confident enough. */
  readonly predicted?: string | undefined
  readonly confidence?: number | undefined
  /** Plugins the turn loaded, and plugins whose preloaded tools the model called, in that order. */
  readonly used: ReadonlyArray<string>
}

/**
 * Compares a turn's decision with what its model did: `loadedBefore` and `loadedAfter` are the
 * thread's `loadedPlugins` at the turn's start and end, `calledTools` the names of the tools the
 * model called during the turn (a `load_capability` call shows in `loadedAfter`).
 */
export const agreement = (
  catalog: Catalog,
  decision: Decision,
  loadedBefore: LoadedPlugins.LoadedPlugins,
  loadedAfter: LoadedPlugins.LoadedPlugins,
  calledTools: Iterable<string>
): Agreement => {
  const used: Array<string> = []
  for (const name of loadedAfter)
    if (!LoadedPlugins.has(loadedBefore, name) && !used.includes(name)) used.push(name)
  for (const tool of calledTools) {
    if (tool === MetaTools.LIST_CAPABILITIES || tool === MetaTools.LOAD_CAPABILITY) continue
    const plugin = catalog.toolsByName.get(tool)?.plugin
    if (
      plugin !== undefined &&
      decision.preloaded.includes(plugin) &&
      !LoadedPlugins.has(loadedBefore, plugin) &&
      !used.includes(plugin)
    )
      used.push(plugin)
  }
  const confident = decision.reason === "shadow" || decision.reason === "preloaded"
  const predicted = confident ? decision.prediction?.plugin : undefined
  const kind: AgreementKind =
    predicted === undefined
      ? "no-prediction"
      : used.includes(predicted)
        ? "agreed"
        : used.length === 0
          ? "no-load"
          : "disagreed"
  return {
    kind,
    mode: decision.mode,
    reason: decision.reason,
    predicted: decision.prediction?.plugin,
    confidence: decision.prediction?.confidence,
    used
  }
}
