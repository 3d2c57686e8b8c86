// Type-checked against the published declarations (tsc --noEmit, strict, NodeNext).

import {
  Catalog,
  definePlugin,
  defineTool,
  type Plugin,
  TokenBudget,
  validateManifest
} from "@plugboard/core"
import { createOracleApp, type OracleAppOptions } from "@plugboard/host-node"
import type { ToolCallEvent } from "@plugboard/langgraph"
import { layerSessionStore } from "@plugboard/sqlite"
import { CheckpointerConformance } from "@plugboard/testing"
import { cachedCounter, loadTiktokenCounter } from "@plugboard/tokenizers"
import { Either, Schema } from "effect"

const tool = defineTool({
  name: "add",
  description: "Adds two numbers.",
  input: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
  handler: ({ a, b }) => a + b
})
const plugin: Plugin = definePlugin({
  name: "calc",
  manifest: { title: "Calc", summary: "Adds numbers.", whenToUse: ["Arithmetic."], visibility: "always" },
  tools: [tool]
})
const result: { valid: boolean; errors: string[]; warnings: string[] } = validateManifest(
  plugin.manifest,
  "calc"
)
const catalog = Either.getOrThrow(Catalog.make([plugin]))
export const report = async (): Promise<number> =>
  TokenBudget.budgetReport(catalog, {
    basePrompt: "",
    counter: cachedCounter(await loadTiktokenCounter("o200k")),
    k: 1
  }).nothingLoaded.total
export const options: OracleAppOptions = { plugins: [plugin] }
export const pieces: ReadonlyArray<unknown> = [
  createOracleApp,
  layerSessionStore,
  CheckpointerConformance,
  result
]
export type Event = ToolCallEvent
