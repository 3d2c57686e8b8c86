/**
 * The catalog as every server command boots it: the module's plugins, the sources beside them (MCP
 * servers, Agent Skills, `Sources.ts`), the operator's manifest overrides, then `Catalog.make`.
 * `createOracleApp` (serve) and `plugboard mcp` both boot through here, so the gateway offers the
 * catalog the oracle offers, and refuses to boot with the same `[boot-error]` lines.
 */
import { Catalog, CodeMode, type Plugin, type RuntimeLogger, type TokenCounter } from "@plugboard/core"
import { Either } from "effect"
import { type Relist, relister } from "./CatalogRelist.js"
import { bootWarnings } from "./CatalogWarnings.js"
import { type ManifestOverridesInput, readManifestOverrides } from "./ManifestOverridesFile.js"
import { loadSources, type Sources, type SourcesOptions } from "./Sources.js"

/** Options of `bootCatalog`: the sources' (`SourcesOptions`), and the overrides. */
export interface CatalogBootOptions extends SourcesOptions {
  /** The operator's manifest overrides: a file (relative to `cwd`) or the object. */
  readonly manifestOverrides?: ManifestOverridesInput | undefined
  /** Where each warning goes as it is known (default: kept in `warnings` only). */
  readonly logger?: RuntimeLogger | undefined
  /** `LOAD_BUDGET_TOKENS` (docs/spec/token-budget.md#the-load-budget); core's default when absent. */
  readonly loadBudgetTokens?: number | undefined
  /** What prices a load for that budget (the exact o200k counter when the host has it). */
  readonly tokenCounter?: TokenCounter.TokenCounterService | undefined
  /** Counts the operating guides for their warnings (default: o200k, `CatalogWarnings.defaultCounter`). */
  readonly counter?: (() => Promise<TokenCounter.TokenCounterService>) | undefined
}

/** A booted catalog and the sources its derived plugins call through (close them at shutdown). */
export interface BootedCatalog {
  readonly catalog: Catalog.Catalog
  readonly sources: Sources
  /**
   * The catalog's warnings (`CatalogWarnings.catalogWarnings`, each logged once): what inspect,
   * `/health/plugins` and the console print about it. The sources' own are in `sources.warnings`.
   */
  readonly warnings: ReadonlyArray<string>
  /**
   * Builds a catalog again as boot did, with an MCP server's tool list read after boot (an
   * OAuth server's first connect, `CatalogRelist.ts`); absent when no MCP server is mounted.
   */
  readonly relist?: Relist | undefined
}

/** Why boot stopped: the `[boot-error]` lines, in the order serve prints them, and the warnings. */
export interface CatalogBootFailure {
  readonly errors: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
}

/**
 * Boots the catalog of `plugins` and the sources `options` names. Resolves with the catalog, or
 * with the failure (its sources already closed); never rejects for a bad plugin, config or server.
 */
export const bootCatalog = async (
  plugins: ReadonlyArray<Plugin>,
  options: CatalogBootOptions
): Promise<Either.Either<BootedCatalog, CatalogBootFailure>> => {
  const sources = await loadSources(plugins, options)
  const warnings: Array<string> = [...sources.warnings]
  for (const warning of sources.warnings) options.logger?.warn(warning)
  const fail = async (errors: ReadonlyArray<string>) => {
    await sources.close()
    return Either.left({ errors, warnings })
  }
  const overrides = await readManifestOverrides(options.manifestOverrides, options.cwd)
  if (overrides.errors.length > 0) return fail([...sources.errors, ...overrides.errors])
  const built = Catalog.make([...plugins, ...sources.plugins], {
    manifestOverrides: overrides.overrides,
    loadBudgetTokens: options.loadBudgetTokens,
    tokenCounter: options.tokenCounter
  })
  if (Either.isLeft(built)) {
    // The soft problems too: fixing the hard ones should not be followed by a surprise.
    for (const warning of built.left.warningLines) options.logger?.warn(warning)
    warnings.push(...built.left.warningLines)
    return fail([...sources.errors, ...built.left.lines])
  }
  if (sources.errors.length > 0) return fail(sources.errors)
  // The same list inspect prints (CatalogWarnings.ts), oversized operating guides included.
  const catalogWarnings = await bootWarnings(built.right, options.counter)
  for (const warning of catalogWarnings) options.logger?.warn(warning)
  const relist = relister({
    plugins,
    sources,
    manifestOverrides: overrides.overrides,
    loadBudgetTokens: options.loadBudgetTokens,
    tokenCounter: options.tokenCounter
  })
  return Either.right({
    catalog: built.right,
    sources,
    warnings: catalogWarnings,
    ...(relist === undefined ? {} : { relist })
  })
}

/**
 * `CODE_MODE` as the commands that boot without the server's config read it (`inspect`): absent,
 * empty or `off` is off, `on` is on, anything else a `[boot-error]` line (docs/code-mode.md).
 */
export const codeModeFromEnv = (
  env: Readonly<Record<string, string | undefined>>
): Either.Either<CodeMode.Setting, string> => {
  // Read as the server's config reads it (Config.ts `choice`): any case, the same message.
  const raw = env.CODE_MODE?.trim()
  if (raw === undefined || raw === "") return Either.right("off")
  const setting = CodeMode.settings.find((s) => s === raw.toLowerCase())
  return setting !== undefined
    ? Either.right(setting)
    : Either.left(
        `CODE_MODE must be one of ${CodeMode.settings.join(", ")}, got ${JSON.stringify(raw.slice(0, 40))}.`
      )
}

/**
 * `LOAD_BUDGET_TOKENS` as the commands that boot without the server's config read it (`inspect`,
 * `plugboard mcp`): absent or empty is core's default, a whole number of at least 1 is the budget,
 * anything else a `[boot-error]` line.
 */
export const loadBudgetFromEnv = (
  env: Readonly<Record<string, string | undefined>>
): Either.Either<number | undefined, string> => {
  const raw = env.LOAD_BUDGET_TOKENS?.trim()
  if (raw === undefined || raw === "") return Either.right(undefined)
  const n = Number(raw)
  return Number.isSafeInteger(n) && n >= 1 && /^\d+$/.test(raw)
    ? Either.right(n)
    : Either.left(
        `LOAD_BUDGET_TOKENS must be a whole number of tokens of at least 1, got ${JSON.stringify(raw.slice(0, 40))}.`
      )
}
