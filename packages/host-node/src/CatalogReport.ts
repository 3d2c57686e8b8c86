/**
 * The catalog report, as plain data, from one builder: what `plugboard inspect` prints (the
 * terminal view renders it, `--json` prints it as it is), what the server reports at boot
 * (`BootReport`, `/health/plugins`) and what the dev console shows. Its shape is versioned
 * (`schemaVersion`) and documented in docs/inspect-json-schema.md; any change that removes or
 * renames a field bumps the version. Every figure comes from core (`TokenBudget`, `Tier1`,
 * `RoutingEval` with the host's `Ranking`): this module only shapes. The server's modules import it, never the CLI's.
 */
import {
  type Catalog,
  type CodeMode,
  type Embedder,
  MANIFEST_FIELDS,
  type PluginManifest,
  Ranking,
  RoutingEval,
  Tier1,
  TokenBudget,
  type TokenCounter
} from "@plugboard/core"
import { Effect } from "effect"
import { catalogWarnings } from "./CatalogWarnings.js"
import type { Progress } from "./inspect/Progress.js"
import type { QueryLine } from "./inspect/Queries.js"

/** The version of the JSON shape. */
export const SCHEMA_VERSION = 1

/** One plugin row. */
export interface PluginRow {
  readonly name: string
  readonly title: string
  readonly visibility: "always" | "on-demand" | "silent"
  readonly category: string | null
  readonly stability: string | null
  readonly tools: number
  readonly alwaysTools: number
  readonly onDemandTools: number
  readonly examples: number
  /** Where the plugin came from: a TypeScript module, an MCP server, or a skill folder. */
  readonly source: "typescript" | "mcp" | "skill"
  /** Why the plugin cannot be used (an MCP server unreachable with nothing cached), or null. */
  readonly unavailable: string | null
  /**
   * The MCP revision an MCP plugin's tool list was negotiated on (docs/mounting.md#protocol-revisions),
   * fresh or cached; null for other plugins and for a server never reached.
   */
  readonly protocolVersion: string | null
  /**
   * The effective manifest (after the operator's overrides), its fields in the order of
   * docs/spec/manifest.md#fields.
   */
  readonly manifest: Readonly<Record<string, unknown>>
  /** What each override changed (`from` null: the field was unset), in the order applied. */
  readonly overrides: ReadonlyArray<OverrideJson>
  /** The UCAN capabilities a user must hold to use the plugin (docs/plugins.md#requiring-capabilities). */
  readonly requires: ReadonlyArray<{ readonly can: string; readonly with: string }>
  /** Its tools that declare their own `requires`, by name. */
  readonly toolRequires: ReadonlyArray<{
    readonly tool: string
    readonly requires: ReadonlyArray<{ readonly can: string; readonly with: string }>
  }>
}

/** One field an operator override changed. */
export interface OverrideJson {
  readonly field: string
  readonly from: unknown
  readonly to: unknown
  /** Where the override was written: `manifestOverrides.<plugin>`, `mcpServers.<name>.manifest`, … */
  readonly by: string
}

/** A missed query in the JSON shape (`rank` null: the plugin was not ranked at all). */
export interface MissJson {
  readonly query: string
  readonly rank: number | null
  readonly top: ReadonlyArray<string>
  readonly example: number | null
}

/** A label naming no discoverable plugin, with the 1-based lines of its queries. */
export interface UnknownLabelJson {
  readonly plugin: string
  readonly reason: "unknown" | "silent"
  readonly lines: ReadonlyArray<number>
}

/** Routing figures of one query set. */
export interface MetricsJson {
  readonly queries: number
  readonly recallAt1: number
  readonly recallAtK: number
  readonly mrr: number
  readonly perPlugin: ReadonlyArray<{
    readonly plugin: string
    readonly queries: number
    readonly hitsAt1: number
    readonly hitsAtK: number
    readonly misses: ReadonlyArray<MissJson>
  }>
  readonly stealing: ReadonlyArray<RoutingEval.StealingPair>
}

/** The ranking an evaluation measured: the host's (`Ranking`), as `list_capabilities` ranks. */
export interface RankingJson {
  /** `lexical` (`CapabilityIndex`), or `fused` with `embedder` (`SemanticIndex`, `EMBEDDING_MODEL`). */
  readonly kind: "lexical" | "fused"
  /** The embedder's name of a fused ranking (e.g. `all-MiniLM-L6-v2-int8`), else null. */
  readonly embedder: string | null
  /** What the terminal prints: `lexical`, or `fused with <embedder> (weight 0.6)`. */
  readonly label: string
}

/** The `eval` section. */
export interface EvalJson {
  /** Which ranking the figures measure. */
  readonly ranking: RankingJson
  readonly k: number
  /** `--min-recall`: the recall@k each evaluated set must reach, or null. */
  readonly minRecall: number | null
  /** True when a set with queries (examples, labelled queries) is below `minRecall`. */
  readonly belowMinRecall: boolean
  readonly examples: MetricsJson & { readonly withoutExamples: ReadonlyArray<string> }
  readonly queries:
    | (MetricsJson & {
        readonly file: string
        readonly unknownLabels: ReadonlyArray<UnknownLabelJson>
        readonly normalizedLabels: RoutingEval.QueriesReport["normalizedLabels"]
      })
    | null
}

/** The `budget` section. */
export interface BudgetJson {
  readonly budget: number
  readonly nothingLoaded: { readonly total: number; readonly exceeds: boolean }
  readonly loaded: {
    readonly plugins: ReadonlyArray<string>
    readonly cost: TokenBudget.TurnCost
    readonly exceeds: boolean
  } | null
  readonly demotions: ReadonlyArray<TokenBudget.Demotion>
  readonly demote: ReadonlyArray<string>
  readonly totalAfterDemotion: number
  readonly fits: boolean
}

/** Which skills may run their scripts: `SKILLS_RUN` as read, and the skills that got `run_script`. */
export interface SkillsRunReport {
  readonly allowed: "none" | "all" | ReadonlyArray<string>
  readonly runnable: ReadonlyArray<string>
}

/**
 * A full report. `over-budget`: `--budget` is exceeded; `below-min-recall`: routing is below
 * `--min-recall` (and the budget holds). Both exit 1.
 */
export interface InspectReport {
  readonly schemaVersion: typeof SCHEMA_VERSION
  readonly command: "inspect"
  readonly status: "ok" | "over-budget" | "below-min-recall"
  readonly exitCode: 0 | 1
  readonly module: string
  readonly tokenizer: string
  readonly plugins: ReadonlyArray<PluginRow>
  readonly warnings: ReadonlyArray<string>
  readonly tier1: { readonly text: string; readonly tokens: number; readonly plugins: ReadonlyArray<string> }
  /**
   * Whether code mode is on (`CODE_MODE`, docs/code-mode.md): then `nothingLoaded` and each load's
   * cost count `run_code` and its API over the offered tools.
   */
  readonly codeMode: CodeMode.Setting
  /**
   * Skills whose scripts run (`SKILLS_RUN`, docs/skills-that-run.md): what the operator allowed,
   * and the skills that got `run_script` on this host (none without a sandbox: see the warnings).
   */
  readonly skillsRun: SkillsRunReport
  readonly nothingLoaded: TokenBudget.TurnCost
  readonly perPlugin: ReadonlyArray<TokenBudget.PluginLoadCost>
  /**
   * Every operating guide with its tokens, where it is paid (`prompt`: an always-tier plugin's, on
   * every call; `load`: in `load_capability`'s answer), and whether it is above the warning size.
   */
  readonly guides: ReadonlyArray<TokenBudget.GuideCost>
  readonly worstCase: TokenBudget.BudgetReport["worstCase"]
  readonly allBound: TokenBudget.BudgetReport["allBound"]
  /**
   * What an MCP client mounting the catalog with `plugboard mcp` pays (docs/mcp-gateway.md): the
   * server's instructions, `tools/list` at connect and after the `k` most expensive loads.
   */
  readonly gateway: TokenBudget.GatewayCost
  readonly budget: BudgetJson | null
  readonly eval: EvalJson | null
}

/** The report when there is no catalog to report on. */
export interface InspectFailure {
  readonly schemaVersion: typeof SCHEMA_VERSION
  readonly command: "inspect"
  /** `boot-error`: hard manifest errors; `error`: the module or an input file could not be used. */
  readonly status: "boot-error" | "error"
  readonly exitCode: number
  readonly module: string
  /** For `boot-error`, each `[boot-error] ...` line; for `error`, the one message. */
  readonly errors: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
}

const metricsJson = (r: RoutingEval.RoutingReport): MetricsJson => ({
  queries: r.queries,
  recallAt1: r.recallAt1,
  recallAtK: r.recallAtK,
  mrr: r.mrr,
  perPlugin: r.perPlugin.map((p) => ({
    plugin: p.plugin,
    queries: p.queries,
    hitsAt1: p.hitsAt1,
    hitsAtK: p.hitsAtK,
    misses: p.misses.map((o) => ({
      query: o.query,
      rank: o.rank ?? null,
      top: o.top,
      example: o.example ?? null
    }))
  })),
  stealing: r.stealing
})

/**
 * A manifest as JSON shows it: its fields in the order of docs/spec/manifest.md#fields, unset ones
 * left out.
 */
const effectiveManifest = (m: PluginManifest): Readonly<Record<string, unknown>> => {
  const out: Record<string, unknown> = {}
  for (const key of MANIFEST_FIELDS) if (m[key] !== undefined) out[key] = m[key]
  return out
}

/** What `buildReport` needs besides the catalog. */
export interface ReportInput {
  readonly module: string
  readonly counter: TokenCounter.TokenCounterService
  readonly basePrompt: string
  readonly k: number
  readonly budget: number | undefined
  readonly loaded: ReadonlyArray<string> | undefined
  readonly eval: boolean
  readonly minRecall?: number | undefined
  readonly queries: { readonly file: string; readonly items: ReadonlyArray<QueryLine> } | undefined
  /** Code mode (`CODE_MODE`): the costs count `run_code`'s API (default off). */
  readonly codeMode?: CodeMode.Setting | undefined
  /** `SKILLS_RUN` and the skills that may run (default: none allowed). */
  readonly skillsRun?: SkillsRunReport | undefined
  /** Query label → plugin name, from the module's `aliases` export. */
  readonly aliases?: ReadonlyMap<string, string> | undefined
  /** `[boot-warning] …` lines of the catalog's sources (MCP config, servers, skills). */
  readonly warnings?: ReadonlyArray<string> | undefined
  /** Told of the long steps (counting tokens, ranking `--eval`'s queries); default: nothing. */
  readonly progress?: Progress | undefined
  /**
   * The `eval` section computed beforehand (`evaluateRouting` with the host's ranking); when
   * absent and `eval` is set, it is computed here with the lexical ranking.
   */
  readonly evaluation?: EvalJson | undefined
}

/**
 * The `eval` section: the manifests' examples (leave-one-out) and the labelled queries, ranked by
 * `ranking`, the one the host hands `list_capabilities` (`Ranking.lexical`, or the fused ranking
 * of `EMBEDDING_MODEL`). Fails when a fused ranking's embedder does.
 */
export const evaluateRouting = (
  catalog: Catalog.Catalog,
  input: Pick<ReportInput, "minRecall" | "queries" | "aliases" | "progress">,
  ranking: Ranking.Ranking
): Effect.Effect<EvalJson, Embedder.EmbedderError> =>
  Effect.gen(function* () {
    const progress = input.progress
    progress?.phase(`evaluating the manifests' examples (${ranking.label})…`)
    const examples = yield* RoutingEval.evaluateExamplesWith(ranking, catalog, {
      onProgress:
        progress === undefined
          ? undefined
          : (done, total) => progress.step("evaluating examples", done, total, "queries")
    })
    if (input.queries !== undefined) progress?.phase(`evaluating ${input.queries.file} (${ranking.label})…`)
    const queries =
      input.queries === undefined
        ? undefined
        : yield* RoutingEval.evaluateQueriesWith(ranking, catalog, input.queries.items, {
            aliases: input.aliases,
            onProgress:
              progress === undefined
                ? undefined
                : (done, total) => progress.step("evaluating queries", done, total, "queries")
          })
    const minRecall = input.minRecall ?? null
    const below = (r: RoutingEval.RoutingReport | undefined) =>
      minRecall !== null && r !== undefined && r.queries > 0 && r.recallAtK < minRecall
    return {
      ranking: { kind: ranking.kind, embedder: ranking.embedder ?? null, label: ranking.label },
      k: examples.k,
      minRecall,
      belowMinRecall: below(examples) || below(queries),
      examples: { ...metricsJson(examples), withoutExamples: examples.withoutExamples },
      queries:
        queries === undefined || input.queries === undefined
          ? null
          : {
              file: input.queries.file,
              ...metricsJson(queries),
              unknownLabels: queries.unknownLabels.map((u) => ({
                plugin: u.plugin,
                reason: u.reason,
                lines: u.positions.map((i) => input.queries!.items[i]!.line)
              })),
              normalizedLabels: queries.normalizedLabels
            }
    }
  })

/** Builds the report of a catalog that booted. */
export const buildReport = (catalog: Catalog.Catalog, input: ReportInput): InspectReport => {
  const { counter } = input
  const progress = input.progress
  progress?.phase(`counting tokens of ${catalog.entries.length.toLocaleString("en-US")} plugins…`)
  const budgetReport = TokenBudget.budgetReport(catalog, {
    basePrompt: input.basePrompt,
    counter,
    k: input.k,
    budget: input.budget,
    loaded: input.loaded,
    codeMode: input.codeMode
  })
  const tier1Text = Tier1.render(catalog)
  const guides = TokenBudget.guideCosts(catalog, counter)
  const b = budgetReport.budget
  const budget: BudgetJson | null =
    b === undefined
      ? null
      : {
          budget: b.budget,
          nothingLoaded: { total: budgetReport.nothingLoaded.total, exceeds: b.nothingLoadedExceeds },
          loaded:
            b.loaded === undefined
              ? null
              : { plugins: b.loaded.plugins, cost: b.loaded.cost, exceeds: b.loaded.exceeds },
          demotions: b.demotions,
          demote: b.demote,
          totalAfterDemotion: b.totalAfterDemotion,
          fits: b.fits
        }
  const over = budget !== null && (budget.nothingLoaded.exceeds || budget.loaded?.exceeds === true)

  const evalJson: EvalJson | null =
    input.evaluation ??
    (input.eval ? Effect.runSync(evaluateRouting(catalog, input, Ranking.lexical(catalog))) : null)

  return {
    schemaVersion: SCHEMA_VERSION,
    command: "inspect",
    status: over ? "over-budget" : evalJson?.belowMinRecall === true ? "below-min-recall" : "ok",
    exitCode: over || evalJson?.belowMinRecall === true ? 1 : 0,
    module: input.module,
    tokenizer: budgetReport.counter,
    plugins: catalog.entries.map(
      (e): PluginRow => ({
        name: e.name,
        title: e.manifest.title,
        visibility: e.visibility,
        category: e.manifest.category ?? null,
        stability: e.manifest.stability ?? null,
        tools: e.tools.length,
        alwaysTools: e.alwaysTools.length,
        onDemandTools: e.onDemandTools.length,
        examples: e.manifest.examples?.length ?? 0,
        source: e.source?.kind ?? "typescript",
        unavailable: e.unavailable ?? null,
        protocolVersion: e.source?.kind === "mcp" ? (e.source.protocolVersion ?? null) : null,
        manifest: effectiveManifest(e.manifest),
        overrides: (e.overrides ?? []).map((c) => ({
          field: c.field,
          from: c.from ?? null,
          to: c.to,
          by: c.by
        })),
        requires: e.requires ?? [],
        toolRequires: e.tools.flatMap((t) =>
          t.requires === undefined ? [] : [{ tool: t.name, requires: t.requires }]
        )
      })
    ),
    // The sources', then the catalog's own (CatalogWarnings.ts: what the boot log and the console print).
    warnings: [...(input.warnings ?? []), ...catalogWarnings(catalog, counter)],
    tier1: {
      text: tier1Text,
      tokens: counter.count(tier1Text),
      plugins: catalog.entries
        .filter((e) => e.visibility === "always")
        .map((e) => e.name)
        .sort()
    },
    codeMode: input.codeMode ?? "off",
    skillsRun: input.skillsRun ?? { allowed: "none", runnable: [] },
    nothingLoaded: budgetReport.nothingLoaded,
    perPlugin: budgetReport.perPlugin,
    guides,
    worstCase: budgetReport.worstCase,
    allBound: budgetReport.allBound,
    gateway: TokenBudget.gatewayCost(catalog, { counter, k: input.k }),
    budget,
    eval: evalJson
  }
}
