/**
 * A plugboard catalog for an agent built on the Vercel AI SDK (docs/ai-sdk.md): built once, then
 * one `turn` per user message. The app keeps its own model, messages and `generateText` /
 * `streamText` call; the catalog gives it the tools, the per-step hook and the system prompt.
 */
import {
  Approval,
  Catalog,
  CatalogSource,
  type Plugin,
  type RuntimeLogger,
  silentLogger,
  Tier1
} from "@plugboard/core"
import { Effect, Either } from "effect"
import { type CatalogTurn, makeTurn, type QueryRanking, type TurnOptions } from "./CatalogTurn.js"

/** Options of {@link createPlugboard}. */
export interface PlugboardOptions {
  /**
   * The plugins: TypeScript plugins, and those derived from MCP servers and skills folders
   * (`@plugboard/mcp`, `@plugboard/skills`; docs/ai-sdk.md#mcp-servers-and-skills).
   */
  readonly plugins: ReadonlyArray<Plugin>
  /**
   * Plugins derived from other sources: `mountMcpServers` of `@plugboard/mcp`, `loadSkills` of
   * `@plugboard/skills` (anything with `specs`). They become plugins by core's rules
   * (`CatalogSource.toPlugins`); a tool name a TypeScript plugin already has is namespaced.
   */
  readonly sources?: ReadonlyArray<PluginSource> | undefined
  /** The operator's manifest overrides: plugin name → manifest fields (core's `ManifestOverrides`). */
  readonly manifestOverrides?: Readonly<Record<string, unknown>> | undefined
  /** Where tool handlers and this adapter log; nothing is logged when absent. */
  readonly logger?: RuntimeLogger | undefined
  /** Ranks `list_capabilities`' query with an embedder; lexical when absent or when it fails. */
  readonly rank?: QueryRanking | undefined
  /**
   * Tools that wait for the user's approval besides those whose definition says
   * `requiresApproval`: `<plugin>` or `<plugin>/<tool>` entries, comma-separated (the server's
   * `APPROVAL_TOOLS`). They go through the SDK's own approval (docs/ai-sdk.md#approvals).
   */
  readonly approvalTools?: string | undefined
}

/** What a source of derived plugins gives: specs, and what its reading found wrong. */
export interface PluginSource {
  readonly specs: ReadonlyArray<CatalogSource.DerivedPluginSpec>
  readonly errors?: ReadonlyArray<string> | undefined
  readonly warnings?: ReadonlyArray<string> | undefined
}

/** A catalog ready for AI SDK turns. */
export interface Plugboard {
  /** Core's catalog, for queries of your own (`Offer`, `TokenBudget`, `MetaTools`). */
  readonly catalog: Catalog.Catalog
  /** The Tier-1 block (also inside every turn's `system`). */
  readonly tier1: string
  /** `[boot-warning] …` lines: soft manifest problems, worth printing once at startup. */
  readonly warnings: ReadonlyArray<string>
  /** The pieces of one turn for `generateText` / `streamText` (docs/ai-sdk.md#use-it). */
  readonly turn: (options?: TurnOptions) => CatalogTurn
}

/**
 * Builds the catalog by core's rules (manifests validated, names unique, dependencies sorted) and
 * reads the plugins' shared state once. Rejects with core's `CatalogBootError` (every
 * `[boot-error]` line in its `lines`, a source's errors among them) or `SharedStateError`.
 */
export const createPlugboard = async (options: PlugboardOptions): Promise<Plugboard> => {
  const sources = options.sources ?? []
  const taken = options.plugins.flatMap((p) => (p.tools ?? []).map((t) => t.name))
  const derived = CatalogSource.toPlugins(
    sources.flatMap((s) => s.specs),
    { takenToolNames: taken }
  )
  const sourceErrors = [...sources.flatMap((s) => s.errors ?? []), ...derived.errors]
  const sourceWarnings = [...sources.flatMap((s) => s.warnings ?? []), ...derived.warnings]
  if (sourceErrors.length > 0) {
    throw new Catalog.CatalogBootError({
      reason: "invalid-catalog",
      errors: sourceErrors,
      warnings: sourceWarnings
    })
  }
  const built = Catalog.make(
    [...options.plugins, ...derived.plugins],
    options.manifestOverrides === undefined ? {} : { manifestOverrides: options.manifestOverrides }
  )
  if (Either.isLeft(built)) throw built.left
  const catalog = built.right
  const shared = await Effect.runPromise(Catalog.readSharedState(catalog))
  const approval = Approval.parseOperatorList(options.approvalTools ?? "")
  if (Either.isLeft(approval)) throw new RangeError(`createPlugboard: approvalTools: ${approval.left}`)
  const deps = {
    catalog,
    shared,
    logger: options.logger ?? silentLogger,
    rank: options.rank,
    approval: approval.right
  }
  return {
    catalog,
    tier1: Tier1.render(catalog),
    warnings: [...sourceWarnings, ...catalog.warnings].map((w) => `[boot-warning] ${w}`),
    turn: (turnOptions) => makeTurn(deps, turnOptions)
  }
}
