/**
 * The structured metadata every plugin declares: exactly the fields of docs/spec/manifest.md#fields, as
 * Effect Schemas so that hosts can decode manifests that arrive as JSON.
 */
import { Schema } from "effect"

/** The three discovery modes of a plugin or a tool (docs/spec/tiers.md#the-three-tiers). Default: `on-demand`. */
export const Visibility = Schema.Literal("always", "on-demand", "silent")
/** @see Visibility */
export type Visibility = typeof Visibility.Type

/** Grouping label surfaced by `list_capabilities`. */
export const Category = Schema.Literal(
  "data",
  "communication",
  "automation",
  "memory",
  "integration",
  "ui",
  "auth",
  "observability",
  "core"
)
/** @see Category */
export type Category = typeof Category.Type

/** Stability hint; `experimental` plugins get a warning footnote in `list_capabilities`. */
export const Stability = Schema.Literal("stable", "beta", "experimental")
/** @see Stability */
export type Stability = typeof Stability.Type

/** A few-shot example binding a user message to a tool call of the same plugin. */
export const ManifestExample = Schema.Struct({
  user: Schema.String,
  thought: Schema.optional(Schema.String),
  tool: Schema.String,
  args: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
/** @see ManifestExample */
export interface ManifestExample extends Schema.Schema.Type<typeof ManifestExample> {}

/** The manifest of docs/spec/manifest.md. Semantic rules (non-empty summary, ...) live in `validateManifest`. */
export const PluginManifest = Schema.Struct({
  title: Schema.String,
  summary: Schema.String,
  whenToUse: Schema.optional(Schema.Array(Schema.String)),
  whenNotToUse: Schema.optional(Schema.Array(Schema.String)),
  examples: Schema.optional(Schema.Array(ManifestExample)),
  tags: Schema.optional(Schema.Array(Schema.String)),
  category: Schema.optional(Category),
  visibility: Schema.optional(Visibility),
  stability: Schema.optional(Stability)
})
/** @see PluginManifest */
export interface PluginManifest extends Schema.Schema.Type<typeof PluginManifest> {}

/** The manifest's fields, in the order of docs/spec/manifest.md#fields: the order a manifest is shown in. */
export const MANIFEST_FIELDS = [
  "title",
  "summary",
  "whenToUse",
  "whenNotToUse",
  "examples",
  "tags",
  "category",
  "visibility",
  "stability"
] as const satisfies ReadonlyArray<keyof PluginManifest>

/** The visibility a manifest resolves to when it declares none. */
export const DEFAULT_VISIBILITY: Visibility = "on-demand"
