/**
 * The synthetic catalog the agent, agent-profile and ai-sdk benchmarks share: `n` plugins, 5
 * always-tier, one in 50 silent, the rest on-demand, 2 tools each (`lookup_<i>_<0|1>`), handlers
 * that answer from their arguments at once. One definition, so their figures are on one catalog.
 */
import type { Plugin } from "@plugboard/core"
import { Schema } from "effect"

const Query = Schema.Struct({ query: Schema.String.annotations({ description: "What to look up." }) })

/** `n` plugins named `plugin-<i>`; see the module doc. */
export const syntheticPlugins = (n: number): ReadonlyArray<Plugin> =>
  Array.from({ length: n }, (_, i): Plugin => {
    const visibility = i < 5 ? "always" : i % 50 === 49 ? "silent" : "on-demand"
    return {
      name: `plugin-${i}`,
      manifest: {
        title: `Plugin ${i}`,
        summary: `Records of kind ${i}: look up and summarise them.`,
        whenToUse: [`When the user asks about records of kind ${i}.`],
        tags: [`kind-${i}`],
        category: "data",
        visibility
      },
      tools: [0, 1].map((j) => ({
        name: `lookup_${i}_${j}`,
        description: `Look up records of kind ${i} (variant ${j}); returns JSON.`,
        input: Query,
        handler: (input: { query: string }) => ({ kind: i, variant: j, query: input.query, rows: 3 })
      }))
    }
  })
