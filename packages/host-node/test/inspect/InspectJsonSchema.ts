/**
 * The `--json` output of `plugboard inspect`, schema version 1, written independently of the
 * implementation's TypeScript types so that the tests catch a drift between what is printed and
 * what docs/inspect-json-schema.md documents. docs/inspect.schema.json is generated from this
 * (`UPDATE_GOLDEN=1 pnpm vitest run packages/host-node/test/inspect`) and checked equal to it.
 */
import { Schema } from "effect"

const Count = Schema.Int.pipe(Schema.nonNegative())
const Ratio = Schema.Number.pipe(Schema.between(0, 1))
const Names = Schema.Array(Schema.String)

const TurnCost = Schema.Struct({
  basePrompt: Count,
  tier1: Count,
  pluginPrompts: Count,
  metaTools: Count,
  toolSchemas: Count,
  total: Count
}).annotations({ identifier: "TurnCost", description: "Tokens of one model call, by part." })

const ListCost = Schema.Struct({
  tools: Count,
  metaTools: Count,
  toolSchemas: Count,
  total: Count
}).annotations({ identifier: "ListCost", description: "Tokens of an MCP client's tools/list, by part." })

const Capability = Schema.Struct({ can: Schema.String, with: Schema.String }).annotations({
  identifier: "Capability",
  description: "A UCAN capability: an ability on a resource."
})

const PluginRow = Schema.Struct({
  name: Schema.String,
  title: Schema.String,
  visibility: Schema.Literal("always", "on-demand", "silent"),
  category: Schema.NullOr(Schema.String),
  stability: Schema.NullOr(Schema.String),
  tools: Count,
  alwaysTools: Count,
  onDemandTools: Count,
  examples: Count,
  source: Schema.Literal("typescript", "mcp", "skill"),
  unavailable: Schema.NullOr(Schema.String),
  protocolVersion: Schema.NullOr(Schema.String),
  manifest: Schema.Struct({
    title: Schema.String,
    summary: Schema.String,
    whenToUse: Schema.optional(Names),
    whenNotToUse: Schema.optional(Names),
    examples: Schema.optional(Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
    tags: Schema.optional(Names),
    category: Schema.optional(Schema.String),
    visibility: Schema.optional(Schema.Literal("always", "on-demand", "silent")),
    stability: Schema.optional(Schema.String)
  }).annotations({ description: "The effective manifest, after the operator's overrides." }),
  overrides: Schema.Array(
    Schema.Struct({ field: Schema.String, from: Schema.Unknown, to: Schema.Unknown, by: Schema.String })
  ),
  requires: Schema.Array(Capability),
  toolRequires: Schema.Array(Schema.Struct({ tool: Schema.String, requires: Schema.Array(Capability) }))
}).annotations({ identifier: "PluginRow" })

const Miss = Schema.Struct({
  query: Schema.String,
  rank: Schema.NullOr(Schema.Int.pipe(Schema.positive())),
  top: Names,
  example: Schema.NullOr(Count)
}).annotations({ identifier: "Miss", description: "A query whose plugin did not come first." })

const StealingPair = Schema.Struct({
  a: Schema.String,
  b: Schema.String,
  aToB: Count,
  bToA: Count,
  whenToUseOverlap: Ratio,
  sharedTerms: Names
}).annotations({ identifier: "StealingPair" })

const Metrics = {
  queries: Count,
  recallAt1: Ratio,
  recallAtK: Ratio,
  mrr: Ratio,
  perPlugin: Schema.Array(
    Schema.Struct({
      plugin: Schema.String,
      queries: Count,
      hitsAt1: Count,
      hitsAtK: Count,
      misses: Schema.Array(Miss)
    })
  ),
  stealing: Schema.Array(StealingPair)
}

const Eval = Schema.Struct({
  ranking: Schema.Struct({
    kind: Schema.Literal("lexical", "fused"),
    embedder: Schema.NullOr(Schema.String),
    label: Schema.String
  }).annotations({ description: "The ranking the figures measure: the host's, as list_capabilities ranks." }),
  k: Schema.Int.pipe(Schema.positive()),
  minRecall: Schema.NullOr(Ratio),
  belowMinRecall: Schema.Boolean,
  examples: Schema.Struct({ ...Metrics, withoutExamples: Names }),
  queries: Schema.NullOr(
    Schema.Struct({
      file: Schema.String,
      ...Metrics,
      unknownLabels: Schema.Array(
        Schema.Struct({
          plugin: Schema.String,
          reason: Schema.Literal("unknown", "silent"),
          lines: Schema.Array(Schema.Int.pipe(Schema.positive()))
        })
      ),
      normalizedLabels: Schema.Array(
        Schema.Struct({
          label: Schema.String,
          plugin: Schema.String,
          via: Schema.Literal("alias", "normalized")
        })
      )
    })
  )
}).annotations({ identifier: "Eval" })

const Budget = Schema.Struct({
  budget: Count,
  nothingLoaded: Schema.Struct({ total: Count, exceeds: Schema.Boolean }),
  loaded: Schema.NullOr(Schema.Struct({ plugins: Names, cost: TurnCost, exceeds: Schema.Boolean })),
  demotions: Schema.Array(Schema.Struct({ name: Schema.String, saving: Schema.Int })),
  demote: Names,
  totalAfterDemotion: Schema.Int,
  fits: Schema.Boolean
}).annotations({ identifier: "Budget" })

const Common = {
  schemaVersion: Schema.Literal(1),
  command: Schema.Literal("inspect"),
  module: Schema.String
}

/** A catalog that booted: the full report. */
export const InspectReport = Schema.Struct({
  ...Common,
  status: Schema.Literal("ok", "over-budget", "below-min-recall"),
  exitCode: Schema.Literal(0, 1),
  tokenizer: Schema.String,
  plugins: Schema.Array(PluginRow),
  warnings: Names,
  tier1: Schema.Struct({ text: Schema.String, tokens: Count, plugins: Names }),
  codeMode: Schema.Literal("off", "on"),
  skillsRun: Schema.Struct({
    allowed: Schema.Union(Schema.Literal("none", "all"), Names),
    runnable: Names
  }),
  nothingLoaded: TurnCost,
  perPlugin: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      visibility: Schema.Literal("always", "on-demand"),
      tools: Count,
      cost: Count,
      guide: Count
    })
  ),
  guides: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      visibility: Schema.Literal("always", "on-demand"),
      tokens: Count,
      paid: Schema.Literal("prompt", "load"),
      paidTokens: Count,
      cut: Schema.Boolean,
      overWarning: Schema.Boolean
    })
  ),
  worstCase: Schema.Struct({ k: Count, plugins: Names, total: Count }),
  allBound: Schema.Struct({ total: Count, saving: Schema.Int }),
  gateway: Schema.Struct({
    instructions: Count,
    atConnect: ListCost,
    afterLoads: Schema.Struct({ ...ListCost.fields, k: Count, plugins: Names })
  }).annotations({ description: "What an MCP client mounting the catalog with plugboard mcp pays." }),
  budget: Schema.NullOr(Budget),
  eval: Schema.NullOr(Eval)
}).annotations({ identifier: "InspectReport" })

/** No report: hard manifest errors (`boot-error`) or an unusable module or input file (`error`). */
export const InspectFailure = Schema.Struct({
  ...Common,
  status: Schema.Literal("boot-error", "error"),
  exitCode: Schema.Literal(2, 65, 66, 70),
  errors: Names,
  warnings: Names
}).annotations({ identifier: "InspectFailure" })

/** Everything `plugboard inspect --json` prints on stdout. */
export const InspectOutput = Schema.Union(InspectReport, InspectFailure).annotations({
  title: "plugboard inspect --json output",
  description: "schemaVersion 1; see docs/inspect-json-schema.md"
})
