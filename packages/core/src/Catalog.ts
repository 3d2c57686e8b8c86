/**
 * The catalog built once at boot from the plugins: every manifest validated, names unique, one
 * flat tool namespace, `dependsOn` sorted topologically. Queries on it are pure functions.
 *
 * The namespace gathers its parts, each in its own module under `internal/catalog/`: the types
 * (`entry.ts`, `model.ts`), the boot (`boot.ts`: `make`), shared state (`sharedState.ts`) and
 * per-request tools (`requestTools.ts`). Query modules import the types from there, never this
 * barrel, so that the boot can build the `CatalogIndex` without an import cycle.
 */
import type { Either, Schema } from "effect"
import * as Tools from "./internal/tools.js"
import type { JsonSchema, PluginTool, SubAgentSpec } from "./Plugin.js"

export * from "./internal/catalog/boot.js"
export type { CatalogEntry, CatalogSubAgent, CatalogTool, OwnedMiddleware } from "./internal/catalog/entry.js"
export { type Catalog, RESERVED_TOOL_NAMES } from "./internal/catalog/model.js"
export * from "./internal/catalog/requestTools.js"
export * from "./internal/catalog/sharedState.js"

/**
 * The JSON Schema a tool's arguments are offered with, derived the way the catalog derives it:
 * `jsonSchema` when the tool sets one, else the JSON Schema of its Effect Schema `input`
 * (without `$schema`; derived once per schema object). Left, with the reason, when the tool has
 * neither or when `input` has no JSON Schema form (give such a tool a `jsonSchema`).
 */
export const toolParameters: (
  tool: Pick<PluginTool, "input" | "jsonSchema">
) => Either.Either<JsonSchema, string> = Tools.toolParameters

/** The arguments of every sub-agent tool: the task the main agent delegates. */
export const SubAgentInput: Schema.Struct<{ task: typeof Schema.String }> = Tools.SubAgentInput

/**
 * A sub-agent as a plugin tool: `SubAgentInput` arguments, and a handler that passes the task to
 * `spec.run`. The catalog resolves sub-agents through it, so a sub-agent is named, described,
 * gated and offered exactly like a tool.
 */
export const subAgentTool: (
  spec: SubAgentSpec
) => PluginTool<{ readonly task: string }, { readonly task: string }> = Tools.subAgentTool
