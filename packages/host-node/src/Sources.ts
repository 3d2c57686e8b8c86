/**
 * The catalog's sources beyond TypeScript modules: MCP servers (a config file in the format MCP
 * clients use, or the same object) and Agent Skills folders. Each becomes plugins through core's
 * rules (`CatalogSource.toPlugins`), in one call for every source, so a tool name two sources
 * share is namespaced the same way whichever source it came from; serve and inspect both boot
 * through here, so what inspect reports is what the server offers.
 */
import { resolve } from "node:path"
import { CatalogSource, type Plugin, type RuntimeLogger } from "@plugboard/core"
import {
  type McpDescription,
  type McpPool,
  type McpServerConfig,
  type McpServersInput,
  type MountedMcpServers,
  mcpSpecs,
  mintInvocations,
  mountMcpServers,
  type OAuthConnections
} from "@plugboard/mcp"
import { loadSkills } from "@plugboard/skills"
import type { Signer } from "@plugboard/ucan"
import { makeJsonSchemaCheck } from "./JsonSchemaCheck.js"
import { type SkillsRun, scriptRunning, unavailableWarning } from "./SkillsRun.js"

/** An MCP config as `createOracleApp({ mcpServers })` takes it: a file path, or the parsed object. */
export type { McpServersInput }

/** Options of `loadSources`. */
export interface SourcesOptions {
  /** The MCP config: a file (relative to `cwd`) or the object. */
  readonly mcpServers?: McpServersInput | undefined
  /** Skills folders: each immediate subfolder holding a `SKILL.md` is one plugin. */
  readonly skills?: string | ReadonlyArray<string> | undefined
  /** Which skills may run their scripts (`SKILLS_RUN`, docs/skills-that-run.md); none when absent. */
  readonly skillsRun?: SkillsRun | undefined
  readonly cwd: string
  /** Where MCP tool lists are cached (`<data>/mcp-cache`). */
  readonly cacheDir: string
  /** Ask every server at boot even when cached (`inspect --refresh`). */
  readonly refresh?: boolean | undefined
  /**
   * The oracle's key, asked for only when a server sets `forwardUcan`: such a server refuses
   * an anonymous listing, so discovery lists it with the oracle's own invocation.
   */
  readonly signer?: (() => Promise<Signer | undefined>) | undefined
  /** Idle time after which an MCP connection closes. */
  readonly idleMs?: number | undefined
  readonly logger?: RuntimeLogger | undefined
  /** Each user's OAuth connections, for the `auth: "oauth"` servers' calls (docs/oauth.md). */
  readonly oauth?: Pick<OAuthConnections.Connections, "headers" | "renew"> | undefined
}

/** An MCP server's plugin after boot: made from a tool list read since, or unavailable for a reason. */
export type Relisted =
  | { readonly server: McpServerConfig; readonly description: McpDescription }
  | { readonly server: McpServerConfig; readonly unavailable: string }

/** The derived plugins, what to print about them, and the connections they hold. */
export interface Sources {
  readonly plugins: ReadonlyArray<Plugin>
  /** `[boot-error] …` lines: boot stops on any. */
  readonly errors: ReadonlyArray<string>
  /** `[boot-warning] …` lines. */
  readonly warnings: ReadonlyArray<string>
  /** The MCP servers of the config (for per-user invocations). */
  readonly servers: ReadonlyArray<McpServerConfig>
  /** The skills whose scripts run (their plugin has `run_script`), in catalog order. */
  readonly runnableSkills: ReadonlyArray<string>
  /**
   * The invocations a user's turn carries in `mcpUcanContext` (one per `forwardUcan` server);
   * absent when no server forwards UCANs.
   */
  readonly invocationsFor?: ((signer: Signer, userDid: string) => Promise<Record<string, string>>) | undefined
  /**
   * While an MCP server's announced tool change (`tools/list_changed`) is being read: a promise
   * that settles once it is (at most `LIST_CHANGED_WAIT_MS`); undefined otherwise.
   */
  readonly toolsSettled?: (() => Promise<void> | undefined) | undefined
  /** The MCP servers' pool (an OAuth server's tool list is cached through it); absent without MCP. */
  readonly pool?: McpPool | undefined
  /**
   * The derived plugins again, by the same rules and in the same order, with each MCP server of
   * `changed` (by name) made from what it says: its tool list read after boot (an OAuth server's
   * first connect, docs/oauth.md#the-tool-list), or a new reason it is unavailable. Absent without MCP.
   */
  readonly rederive?: ((changed: ReadonlyMap<string, Relisted>) => CatalogSource.DerivedPlugins) | undefined
  /** Closes every MCP connection (kills stdio servers). Idempotent. */
  readonly close: () => Promise<void>
}

/**
 * How long a request waits for tool lists that servers announced as changed before it builds its
 * offer: a relisting is one `tools/list` round trip, and a server slower than this is offered as
 * it was until its list arrives (docs/mounting.md).
 */
export const LIST_CHANGED_WAIT_MS = 1_000

const NONE: Sources = {
  plugins: [],
  errors: [],
  warnings: [],
  servers: [],
  runnableSkills: [],
  close: async () => {}
}

/**
 * Reads every source and derives its plugins. `others` are the TypeScript plugins: their tool
 * names are taken, so a derived tool of the same name is namespaced rather than a collision.
 * Never throws for a bad source: a malformed config or skill is an error line, an unreachable
 * server a warning and an unavailable plugin.
 */
export const loadSources = async (
  others: ReadonlyArray<Plugin>,
  options: SourcesOptions
): Promise<Sources> => {
  if (options.mcpServers === undefined && options.skills === undefined && options.skillsRun === undefined)
    return NONE
  const errors: string[] = []
  const warnings: string[] = []
  const specs: CatalogSource.DerivedPluginSpec[] = []

  let mcp: MountedMcpServers | undefined
  if (options.mcpServers !== undefined) {
    mcp = await mountMcpServers(options.mcpServers, {
      cwd: options.cwd,
      cacheDir: options.cacheDir,
      refresh: options.refresh,
      signer: options.signer,
      idleMs: options.idleMs,
      logger: options.logger,
      oauth: options.oauth
    })
    errors.push(...mcp.errors)
    warnings.push(...mcp.warnings)
    specs.push(...mcp.specs)
  }
  const servers = mcp?.servers ?? []
  const pool = mcp?.pool

  const skillDirs =
    options.skills === undefined ? [] : typeof options.skills === "string" ? [options.skills] : options.skills
  let runnableSkills: ReadonlyArray<string> = []
  if (skillDirs.length > 0) {
    const dirs = skillDirs.map((dir) => resolve(options.cwd, dir))
    // Fails closed: without a sandbox on this host, no skill gets run_script.
    const running = await scriptRunning(options.skillsRun, dirs[0]!)
    if (running._tag === "Unavailable") warnings.push(unavailableWarning(running.reason))
    // One call for every folder: a skill name two folders share is an error naming both files.
    const loaded = await loadSkills(dirs, running._tag === "On" ? { run: running.run } : {})
    errors.push(...loaded.errors)
    warnings.push(...loaded.warnings)
    specs.push(...loaded.specs)
    runnableSkills = loaded.runnable
  } else if (options.skillsRun !== undefined)
    warnings.push(
      "SKILLS_RUN is set, but no skills folder is mounted (SKILLS_DIR or --skills): nothing runs."
    )

  const taken: string[] = []
  for (const p of others) for (const t of p.tools ?? []) if (typeof t?.name === "string") taken.push(t.name)
  const toPluginsOptions = { takenToolNames: taken, checkSchema: makeJsonSchemaCheck().check }
  const derived = CatalogSource.toPlugins(specs, toPluginsOptions)
  errors.push(...derived.errors)
  warnings.push(...derived.warnings)

  const forwarding = servers.filter((s) => s.forwardUcan !== undefined)
  let closed: Promise<void> | undefined
  return {
    plugins: derived.plugins,
    errors: errors.map((e) => `[boot-error] ${e}`),
    warnings: warnings.map((w) => `[boot-warning] ${w}`),
    servers,
    runnableSkills,
    ...(pool === undefined
      ? {}
      : {
          pool,
          toolsSettled: () => pool.toolsSettled(LIST_CHANGED_WAIT_MS),
          rederive: (changed) => {
            for (const name of changed.keys())
              if (!specs.some((s) => s.source.kind === "mcp" && s.source.server === name))
                throw new RangeError(`MCP server '${name}' is not a source of this catalog.`)
            const respecified = specs.map((spec) => {
              const next = spec.source.kind === "mcp" ? changed.get(spec.source.server) : undefined
              if (next === undefined) return spec
              return "description" in next
                ? mcpSpecs(
                    [{ server: next.server, description: next.description, fromCache: true, warnings: [] }],
                    { pool, logger: options.logger, oauth: options.oauth }
                  )[0]!
                : { ...spec, unavailable: next.unavailable }
            })
            return CatalogSource.toPlugins(respecified, toPluginsOptions)
          }
        }),
    ...(forwarding.length === 0
      ? {}
      : {
          invocationsFor: (signer: Signer, userDid: string) =>
            mintInvocations(forwarding, { signer, userDid })
        }),
    close: () => {
      closed ??= mcp === undefined ? Promise.resolve() : mcp.close()
      return closed
    }
  }
}
