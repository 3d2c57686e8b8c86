/**
 * The catalog built again once an MCP server's tool list is read after boot: an `auth: "oauth"`
 * server lists its tools only with a connected user's token, so its plugin is unavailable until
 * the first user connects (docs/oauth.md#the-tool-list). Then the host builds the catalog as boot
 * does: the same plugins, the same sources derived again by core's rules (`CatalogSource.toPlugins`)
 * with that server's list, the same overrides and load budget, then `Catalog.make` (validation,
 * collisions, tiers, the offer's order). A TypeScript plugin is given again as boot resolved it
 * (its `getTools`, `getSubAgents`, `getMiddlewares` are read once, at boot, and not again).
 *
 * The new catalog is taken only when it changes nothing but that plugin: every other plugin keeps
 * its tools under the same names (a thread that loaded one is offered the same prefix). Otherwise
 * (a tool name another derived plugin has, which would namespace that plugin's tools too; a
 * collision `Catalog.make` refuses; a derived problem) the plugin stays unavailable, now with the
 * reason, in a catalog that differs from the old one by that reason only.
 */
import { Catalog, describe, type Plugin, type TokenCounter } from "@plugboard/core"
import type { McpDescription, McpServerConfig } from "@plugboard/mcp"
import { Either } from "effect"
import type { Relisted, Sources } from "./Sources.js"

type CatalogEntry = Catalog.CatalogEntry

/** What `relister` rebuilds from: what boot built the catalog from. */
export interface RelistInput {
  readonly plugins: ReadonlyArray<Plugin>
  readonly sources: Sources
  readonly manifestOverrides: Readonly<Record<string, unknown>> | undefined
  readonly loadBudgetTokens?: number | undefined
  readonly tokenCounter?: TokenCounter.TokenCounterService | undefined
}

/** Why the plugin stays unavailable, and the catalog that says so. */
export interface RelistRefused {
  readonly reason: string
  readonly catalog: Catalog.Catalog
}

/**
 * Builds `current` again with `server`'s plugin made from `description`: the new catalog (right),
 * or why not and the catalog with the plugin unavailable for that reason (left). Never throws.
 * The caller serves the result: the servers relisted before stay as they were made (each call
 * builds on the ones before it, so a second OAuth server's first connect keeps the first's tools).
 */
export type Relist = (
  current: Catalog.Catalog,
  server: McpServerConfig,
  description: McpDescription
) => Either.Either<Catalog.Catalog, RelistRefused>

/** A TypeScript plugin as boot resolved it: its hooks read then, not again. */
const asBooted = (plugin: Plugin, entry: CatalogEntry | undefined): Plugin => {
  if (entry === undefined) return plugin
  const { getTools: _t, getSubAgents: _s, getMiddlewares: _m, ...rest } = plugin
  const subAgents = entry.subAgents.map((s) => s.spec)
  return {
    ...rest,
    tools: entry.tools.map((t) => t.tool),
    middlewares: entry.middlewares,
    ...(subAgents.length === 0 ? {} : { getSubAgents: () => subAgents })
  }
}

const toolNames = (entry: CatalogEntry | undefined): string =>
  entry === undefined ? "" : entry.tools.map((t) => t.name).join("\u0000")

/** The plugins whose tools or availability the new catalog changes, beside `plugin`. */
const changedOthers = (before: Catalog.Catalog, after: Catalog.Catalog, plugin: string): Array<string> =>
  before.entries
    .filter(
      (e) =>
        e.name !== plugin &&
        (toolNames(e) !== toolNames(after.byName.get(e.name)) ||
          e.unavailable !== after.byName.get(e.name)?.unavailable)
    )
    .map((e) => e.name)

/** The rebuild over what boot built `input`'s catalog from; see the module doc. */
export const relister = (input: RelistInput): Relist | undefined => {
  const rederiveFrom = input.sources.rederive
  if (rederiveFrom === undefined) return undefined
  // What the relists so far made of each server, kept for the next one (the catalog served is theirs).
  const made = new Map<string, Relisted>()
  const rederive = (next: Relisted) => rederiveFrom(new Map([...made, [next.server.name, next]]))
  const make = (current: Catalog.Catalog, derived: ReadonlyArray<Plugin>) =>
    Catalog.make([...input.plugins.map((p) => asBooted(p, current.byName.get(p.name))), ...derived], {
      manifestOverrides: input.manifestOverrides,
      loadBudgetTokens: input.loadBudgetTokens,
      tokenCounter: input.tokenCounter
    })
  /** `current` with `server`'s plugin unavailable for `reason` (itself, should that fail). */
  const refused = (current: Catalog.Catalog, server: McpServerConfig, reason: string): RelistRefused => {
    const derived = rederive({ server, unavailable: reason })
    const built = derived.errors.length > 0 ? undefined : make(current, derived.plugins)
    if (built === undefined || Either.isLeft(built)) return { reason, catalog: current }
    made.set(server.name, { server, unavailable: reason })
    return { reason, catalog: built.right }
  }
  return (current, server, description) => {
    const plugin = server.name
    const prefix = `MCP server '${plugin}' listed its tools when a user connected, and they cannot join the catalog:`
    try {
      const derived = rederive({ server, description })
      if (derived.errors.length > 0)
        return Either.left(refused(current, server, `${prefix} ${derived.errors.join(" ")}`))
      const built = make(current, derived.plugins)
      if (Either.isLeft(built))
        return Either.left(refused(current, server, `${prefix} ${built.left.errors.join(" ")}`))
      const others = changedOthers(current, built.right, plugin)
      if (others.length > 0)
        return Either.left(
          refused(
            current,
            server,
            `${prefix} they share tool names with ${others.map((n) => `'${n}'`).join(", ")}, whose tools would be renamed under the threads that loaded them; the host offers it from its next start (docs/oauth.md#the-tool-list).`
          )
        )
      made.set(server.name, { server, description })
      return Either.right(built.right)
    } catch (error) {
      return Either.left(refused(current, server, `${prefix} ${describe(error)}`))
    }
  }
}
