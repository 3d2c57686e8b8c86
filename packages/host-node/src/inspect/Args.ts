/**
 * Command-line options of `plugboard inspect`. Parsing is strict: an unknown option, a missing
 * or malformed value, or a second module is a usage error (exit 64, `EX_USAGE` of sysexits.h),
 * so a typo in a CI script fails loudly instead of silently checking something else.
 */
import { SUMMARY_ROWS, SUMMARY_THRESHOLD, SUMMARY_WARNINGS } from "./Render.js"

/** Exit codes of `plugboard inspect` (documented in docs/inspect-json-schema.md). */
export const ExitCode = {
  /** The report was printed and every checked budget holds. */
  Ok: 0,
  /** `--budget` is exceeded (nothing loaded, or the `--loaded` scenario), or recall@5 is below `--min-recall`. */
  OverBudget: 1,
  /** Hard manifest errors (`[boot-error]` lines), the module cannot be loaded or exports no plugins, or the embedding model cannot be loaded. */
  BootError: 2,
  /** Bad command line: unknown option, missing or malformed value, unknown `--loaded` plugin. */
  Usage: 64,
  /** A `--queries` file that is not valid JSONL of `{"query","plugin"}` lines. */
  DataError: 65,
  /** A `--queries` or `--base-prompt` file that does not exist or cannot be read. */
  NoInput: 66,
  /** A failure inspect did not expect (a bug): the message and stack go to stderr. */
  Software: 70,
  /** The `--html` file cannot be written. */
  CantCreate: 73
} as const

/** The tokenizers `--tokenizer` accepts. */
export const TOKENIZERS = ["o200k", "cl100k", "heuristic"] as const
/** @see TOKENIZERS */
export type Tokenizer = (typeof TOKENIZERS)[number]

/** Parsed options. */
export interface InspectOptions {
  /** The module to inspect, as given (resolved against the working directory); undefined: the default. */
  readonly module: string | undefined
  readonly tokenizer: Tokenizer
  /** Plugins loaded in the worst case. */
  readonly k: number
  /** How many on-demand plugins the terminal lists by cost (`--all`: every one). */
  readonly top: number
  readonly all: boolean
  readonly budget: number | undefined
  /** The `--loaded` scenario, in load order. */
  readonly loaded: ReadonlyArray<string> | undefined
  readonly basePromptFile: string | undefined
  readonly json: boolean
  readonly eval: boolean
  /** `--min-recall`: exit 1 when an evaluated set's recall@5 is below it. */
  readonly minRecall: number | undefined
  readonly queriesFile: string | undefined
  /** `--mcp FILE`: MCP servers mounted beside the module's plugins (default `MCP_CONFIG`). */
  readonly mcp: string | undefined
  /** `--skills DIR`: a folder of Agent Skills mounted beside them (default `SKILLS_DIR`). */
  readonly skills: string | undefined
  /** `--overrides FILE`: the operator's manifest overrides (default `MANIFEST_OVERRIDES`). */
  readonly overrides: string | undefined
  /**
   * `--embedding-model DIR`: `--eval` measures the ranking fused with this model, the one serve
   * ranks with (default `EMBEDDING_MODEL`); lexical when neither is set.
   */
  readonly embeddingModel: string | undefined
  /** `--refresh`: ask every MCP server even when its tool list is cached. */
  readonly refresh: boolean
  /** `--html FILE`: also write the report as one self-contained page (implies `--eval`). */
  readonly html: string | undefined
  readonly help: boolean
}

import { UsageError } from "../cli/UsageError.js"

export { UsageError }

/** The `--help` text. */
export const USAGE = `Usage: plugboard inspect [module] [options]

Reports a plugin catalog offline: plugins, manifest validation, the Tier-1 block, what a turn
costs in tokens, and (with --eval) how well list_capabilities routes queries to plugins.

module                 a file or folder exporting plugins: a default export, \`plugins\` or
                       \`examplePlugins\` (an array of plugins, or one plugin), a built
                       \`catalog\`, or else its named plugin exports.
                       Default: the examples' catalog (examples/catalog).

Options:
  --tokenizer NAME     o200k (default), cl100k or heuristic
  --k N                worst case with the N most expensive plugins loaded (default 5)
  --top N              list the N most expensive on-demand plugins (default 10)
  --all                list everything: every plugin, warning and on-demand plugin's cost
  --budget N           exit 1 when a turn with nothing loaded (or the --loaded scenario)
                       costs more than N tokens; shows what demoting always-tier plugins saves
  --loaded a,b,...     the scenario checked against --budget: these plugins loaded
  --base-prompt FILE   the host's base system prompt (default: none)
  --mcp FILE           also mount the MCP servers of FILE ({"mcpServers": {...}}, as
                       serve --mcp; default MCP_CONFIG): one plugin per server
  --skills DIR         also mount the Agent Skills of DIR (as serve --skills; default SKILLS_DIR)
  --overrides FILE     apply the operator's manifest overrides of FILE (JSON or a JS/TS module,
                       as MANIFEST_OVERRIDES, its default); shows what each override changed
  --refresh            ask every MCP server for its tools even when they are cached
  --json               print the report as JSON (schemaVersion 1, docs/inspect-json-schema.md)
  --html FILE          also write the report with its charts as one self-contained HTML page
                       (no network needed to view it; implies --eval)
  --eval               routing quality: leave-one-out over the manifests' examples
  --queries FILE       also evaluate labelled queries, JSONL of {"query","plugin"} (implies --eval)
  --min-recall R       exit 1 when recall@5 of the examples or the queries is below R (0-1;
                       implies --eval)
  --embedding-model DIR
                       --eval measures the ranking fused with this model (model.onnx and
                       vocab.txt), as serve ranks with it (default EMBEDDING_MODEL; unset:
                       lexical); the report names the ranking it measured
  -h, --help           this text

A catalog of more than ${SUMMARY_THRESHOLD} plugins is summarised: counts per tier and category, the first ${SUMMARY_ROWS}
plugins, warnings grouped by kind (${SUMMARY_WARNINGS} of each), the --top most expensive; --all lists everything,
--json is always the full report. Long steps show progress on stderr when it is a terminal.

Exit codes: 0 ok, 1 over budget or below --min-recall, 2 manifest errors or module not loadable,
64 bad usage, 65 malformed --queries file, 66 unreadable --queries/--base-prompt file,
70 unexpected failure, 73 the --html file cannot be written.`

const FLAGS = new Set(["--json", "--eval", "--all", "--refresh", "--help", "-h"])
const VALUED = new Set([
  "--tokenizer",
  "--k",
  "--top",
  "--budget",
  "--loaded",
  "--base-prompt",
  "--queries",
  "--min-recall",
  "--mcp",
  "--skills",
  "--overrides",
  "--html",
  "--embedding-model"
])

const nonNegativeInteger = (option: string, value: string): number => {
  if (!/^\d+$/.test(value)) {
    throw new UsageError(`${option} expects a whole number of tokens or plugins, got '${value}'.`)
  }
  const n = Number(value)
  if (!Number.isSafeInteger(n)) throw new UsageError(`${option} is too large: '${value}'.`)
  return n
}

/** Parses `argv` (the arguments after `inspect`). Throws `UsageError`. */
export const parseArgs = (argv: ReadonlyArray<string>): InspectOptions => {
  let module: string | undefined
  const values = new Map<string, string>()
  const flags = new Set<string>()
  let positionalOnly = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (positionalOnly || !arg.startsWith("-") || arg === "-") {
      if (module !== undefined) {
        throw new UsageError(`inspect takes one module, got '${module}' and '${arg}'.`)
      }
      module = arg
      continue
    }
    if (arg === "--") {
      positionalOnly = true
      continue
    }
    const eq = arg.indexOf("=")
    const name = eq < 0 ? arg : arg.slice(0, eq)
    if (FLAGS.has(name)) {
      if (eq >= 0) throw new UsageError(`${name} takes no value.`)
      flags.add(name === "-h" ? "--help" : name)
      continue
    }
    if (!VALUED.has(name)) {
      throw new UsageError(`Unknown option '${name}'. Run 'plugboard inspect --help' for the options.`)
    }
    let value: string | undefined
    if (eq >= 0) value = arg.slice(eq + 1)
    else {
      value = argv[i + 1]
      if (value === undefined || (value.startsWith("--") && value.length > 2)) {
        throw new UsageError(`${name} needs a value.`)
      }
      i++
    }
    if (values.has(name)) throw new UsageError(`${name} is given more than once.`)
    values.set(name, value)
  }

  const tokenizer = values.get("--tokenizer") ?? "o200k"
  if (!(TOKENIZERS as ReadonlyArray<string>).includes(tokenizer)) {
    throw new UsageError(`--tokenizer must be one of ${TOKENIZERS.join(", ")}; got '${tokenizer}'.`)
  }
  const k = values.has("--k") ? nonNegativeInteger("--k", values.get("--k")!) : 5
  const top = values.has("--top") ? nonNegativeInteger("--top", values.get("--top")!) : 10
  const budget = values.has("--budget") ? nonNegativeInteger("--budget", values.get("--budget")!) : undefined
  let loaded: Array<string> | undefined
  if (values.has("--loaded")) {
    loaded = values
      .get("--loaded")!
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0)
    if (loaded.length === 0) throw new UsageError("--loaded needs at least one plugin name (a,b,...).")
    if (budget === undefined)
      throw new UsageError("--loaded is the scenario --budget checks: give --budget N too.")
  }
  for (const file of [
    "--base-prompt",
    "--queries",
    "--mcp",
    "--skills",
    "--overrides",
    "--html",
    "--embedding-model"
  ]) {
    if (values.get(file) === "") throw new UsageError(`${file} needs a file name.`)
  }
  const queriesFile = values.get("--queries")
  let minRecall: number | undefined
  if (values.has("--min-recall")) {
    const raw = values.get("--min-recall")!
    minRecall = /^(0(\.\d+)?|1(\.0+)?)$/.test(raw) ? Number(raw) : Number.NaN
    if (Number.isNaN(minRecall))
      throw new UsageError(`--min-recall expects a share between 0 and 1, got '${raw}'.`)
  }
  return {
    module,
    tokenizer: tokenizer as Tokenizer,
    k,
    top,
    all: flags.has("--all"),
    budget,
    loaded,
    basePromptFile: values.get("--base-prompt"),
    json: flags.has("--json"),
    eval: flags.has("--eval") || queriesFile !== undefined || minRecall !== undefined || values.has("--html"),
    minRecall,
    queriesFile,
    mcp: values.get("--mcp"),
    skills: values.get("--skills"),
    overrides: values.get("--overrides"),
    embeddingModel: values.get("--embedding-model"),
    refresh: flags.has("--refresh"),
    html: values.get("--html"),
    help: flags.has("--help")
  }
}
