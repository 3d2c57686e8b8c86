/**
 * `plugboard inspect`: offline report of a plugin catalog (manifests, Tier-1 block, token costs
 * and budgets, routing quality). `runInspect` is the command; the rest is exported for tools
 * that want the report as data.
 */

/** The adapter's piece-caching counter (re-exported: inspect counts with it). */
export { cachedCounter } from "@plugboard/tokenizers"
export * from "../CatalogReport.js"
export {
  defaultModule,
  displayPath,
  type Loaded,
  loadModule,
  ModuleLoadError,
  resolveModule
} from "../cli/LoadModule.js"
export {
  ExitCode,
  type InspectOptions,
  parseArgs,
  TOKENIZERS,
  type Tokenizer,
  USAGE,
  UsageError
} from "./Args.js"
export { type InspectIO, type InspectStream, runInspect } from "./Inspect.js"
/** Progress of inspect's long steps on a terminal's stderr. */
export * as Progress from "./Progress.js"
export { parseQueries, QueriesFileError, type QueryLine, readQueries } from "./Queries.js"
export {
  type RenderOptions,
  render,
  SUMMARY_ROWS,
  SUMMARY_THRESHOLD,
  SUMMARY_WARNINGS
} from "./Render.js"
