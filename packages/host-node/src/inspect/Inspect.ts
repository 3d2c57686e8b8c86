/**
 * `plugboard inspect`: loads a module of plugins, builds the catalog exactly as a host boots it,
 * and reports it offline (no model, no network): plugins, manifest validation, the Tier-1 block,
 * token costs and budgets, and routing quality with `--eval`. Returns the exit code instead of
 * exiting, so tests and other commands can call it.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { CapabilityIndex, Catalog, Ranking, TokenCounter } from "@plugboard/core"
import { cachedCounter, loadTiktokenCounter } from "@plugboard/tokenizers"
import { Data, Effect, Either } from "effect"
import { codeModeFromEnv, loadBudgetFromEnv } from "../CatalogBoot.js"
import {
  buildReport,
  type EvalJson,
  evaluateRouting,
  type InspectFailure,
  type InspectReport,
  SCHEMA_VERSION
} from "../CatalogReport.js"
import { defaultModule, displayPath, loadModuleOrSources, ModuleLoadError } from "../cli/LoadModule.js"
import * as ConsoleAssets from "../console/Assets.js"
import { envValue } from "../EnvValue.js"
import { readManifestOverrides } from "../ManifestOverridesFile.js"
import { loadQueryRanking } from "../QueryRanking.js"
import { skillsRunFromEnv } from "../SkillsRun.js"
import { loadSources } from "../Sources.js"
import { ExitCode, type InspectOptions, parseArgs, USAGE, UsageError } from "./Args.js"
import * as Progress from "./Progress.js"
import { QueriesFileError, type QueryLine, readQueries } from "./Queries.js"
import { render } from "./Render.js"

/** Where inspect writes; `isTTY` turns colour on (unless `NO_COLOR` is set). */
export interface InspectStream {
  readonly write: (chunk: string) => unknown
  readonly isTTY?: boolean | undefined
}

/** The process surroundings of a run; defaults to the real process. */
export interface InspectIO {
  readonly stdout?: InspectStream
  readonly stderr?: InspectStream
  /** Relative paths (module, --queries, --base-prompt) resolve against it; default `INIT_CWD`, else the process's. */
  readonly cwd?: string
  /**
   * Told of the long steps; default: a status line on `stderr` when it is a terminal
   * (`Progress.forStream`), nothing otherwise.
   */
  readonly progress?: Progress.Progress
}

/** A file given on the command line that cannot be read. */
class InputFileError extends Data.TaggedError("InputFileError")<{ readonly message: string }> {
  constructor(message: string) {
    super({ message })
  }
}

/** The `--html` file cannot be written. */
class OutputFileError extends Data.TaggedError("OutputFileError")<{ readonly message: string }> {
  constructor(message: string) {
    super({ message })
  }
}

/** Writes the report as the console's budget page, its data and code inline (docs/console.md). */
const writeHtml = async (path: string, option: string, report: InspectReport): Promise<number> => {
  const html = ConsoleAssets.page(await ConsoleAssets.load(), {
    title: `${report.module} · plugboard budget report`,
    data: report
  })
  try {
    writeFileSync(path, html)
  } catch (thrown) {
    const code = (thrown as { code?: string }).code
    throw new OutputFileError(
      `Cannot write ${option} file '${path}'${code === undefined ? "" : ` (${code})`}.`
    )
  }
  return Buffer.byteLength(html)
}

const readTextFile = (path: string, option: string): string => {
  try {
    return readFileSync(path, "utf8")
  } catch (thrown) {
    const code = (thrown as { code?: string }).code
    throw new InputFileError(
      `Cannot read ${option} file '${path}'${code === "ENOENT" ? ": no such file" : code === "EISDIR" ? ": it is a folder" : ""}.`
    )
  }
}

const counterFor = async (
  tokenizer: InspectOptions["tokenizer"]
): Promise<TokenCounter.TokenCounterService> =>
  tokenizer === "heuristic" ? TokenCounter.heuristic : cachedCounter(await loadTiktokenCounter(tokenizer))

/**
 * Runs `plugboard inspect` with `argv` (the arguments after `inspect`) and resolves to the exit
 * code: 0 ok, 1 over budget, 2 manifest errors or an unusable module, 64 bad usage, 65 a
 * malformed queries file, 66 an unreadable input file, 70 an unexpected failure.
 */
export const runInspect = async (argv: ReadonlyArray<string>, io: InspectIO = {}): Promise<number> => {
  const stdout = io.stdout ?? process.stdout
  const stderr = io.stderr ?? process.stderr
  // `pnpm plugboard` runs in the repository root; INIT_CWD is where the user typed the command.
  const cwd = io.cwd ?? process.env.INIT_CWD ?? process.cwd()
  const progress = io.progress ?? Progress.forStream(stderr)
  const err = (line: string) => {
    progress.clear()
    stderr.write(`${line}\n`)
  }

  let options: InspectOptions
  try {
    options = parseArgs(argv)
  } catch (thrown) {
    if (!(thrown instanceof UsageError)) throw thrown
    err(`plugboard inspect: ${thrown.message}`)
    return ExitCode.Usage
  }
  if (options.help) {
    stdout.write(`${USAGE}\n`)
    return ExitCode.Ok
  }

  let moduleName = options.module ?? displayPath(defaultModule(), cwd)
  const fail = (
    status: InspectFailure["status"],
    exitCode: number,
    errors: ReadonlyArray<string>,
    warnings: ReadonlyArray<string> = []
  ): number => {
    if (status === "boot-error") {
      for (const w of warnings) err(w)
      for (const e of errors) err(e)
      err(
        `plugboard inspect: ${moduleName}: the catalog does not boot (${errors.length} error${errors.length === 1 ? "" : "s"}).`
      )
    } else for (const e of errors) err(`plugboard inspect: ${e}`)
    if (options.json) {
      const failure: InspectFailure = {
        schemaVersion: SCHEMA_VERSION,
        command: "inspect",
        status,
        exitCode,
        module: moduleName,
        errors,
        warnings
      }
      stdout.write(`${JSON.stringify(failure, null, 2)}\n`)
    }
    return exitCode
  }

  try {
    progress.phase(`loading ${moduleName}…`)
    const loaded = await loadModuleOrSources(
      options.module,
      cwd,
      (options.mcp ??
        envValue(process.env.MCP_CONFIG) ??
        options.skills ??
        envValue(process.env.SKILLS_DIR)) !== undefined
    )
    moduleName = loaded.file === undefined ? "(no module)" : displayPath(loaded.file, cwd)

    const basePrompt =
      options.basePromptFile === undefined
        ? ""
        : readTextFile(resolve(cwd, options.basePromptFile), "--base-prompt")
    let queries: { file: string; items: ReadonlyArray<QueryLine> } | undefined
    if (options.queriesFile !== undefined) {
      queries = {
        file: options.queriesFile,
        items: readQueries(resolve(cwd, options.queriesFile), options.queriesFile)
      }
    }

    let catalog: Catalog.Catalog
    let sourceWarnings: ReadonlyArray<string> = []
    const mcp = options.mcp ?? envValue(process.env.MCP_CONFIG)
    const skills = options.skills ?? envValue(process.env.SKILLS_DIR)
    // The operator's overrides, read as serve reads them (docs/plugins.md#manifest-overrides).
    const overridesFile = options.overrides ?? envValue(process.env.MANIFEST_OVERRIDES)
    const overrides = await readManifestOverrides(overridesFile, cwd)
    if (overrides.errors.length > 0) return fail("boot-error", ExitCode.BootError, overrides.errors, [])
    const budget = loadBudgetFromEnv(process.env)
    if (Either.isLeft(budget)) return fail("boot-error", ExitCode.BootError, [budget.left], [])
    const codeMode = codeModeFromEnv(process.env)
    if (Either.isLeft(codeMode)) return fail("boot-error", ExitCode.BootError, [codeMode.left], [])
    const skillsRun = skillsRunFromEnv(process.env, cwd)
    if (Either.isLeft(skillsRun)) return fail("boot-error", ExitCode.BootError, [skillsRun.left], [])
    let runnableSkills: ReadonlyArray<string> = []
    if (
      loaded.kind === "catalog" &&
      mcp === undefined &&
      skills === undefined &&
      overridesFile === undefined &&
      budget.right === undefined &&
      skillsRun.right === undefined
    )
      catalog = loaded.catalog
    else {
      const plugins = loaded.kind === "catalog" ? loaded.catalog.entries.map((e) => e.plugin) : loaded.plugins
      // The same sources serve boots with, so the report is what the server would offer.
      if (mcp !== undefined || skills !== undefined) progress.phase("reading MCP servers and skills…")
      const sources = await loadSources(plugins, {
        mcpServers: mcp,
        skills,
        skillsRun: skillsRun.right,
        cwd,
        cacheDir: resolve(
          cwd,
          envValue(process.env.MCP_CACHE_DIR) ??
            join(envValue(process.env.PLUGBOARD_DATA_DIR) ?? ".plugboard", "mcp-cache")
        ),
        refresh: options.refresh
      })
      // Every tool list is read: no server is needed past this point.
      await sources.close()
      sourceWarnings = sources.warnings
      runnableSkills = sources.runnableSkills
      progress.phase(
        `building the catalog of ${(plugins.length + sources.plugins.length).toLocaleString("en-US")} plugins…`
      )
      const built = Catalog.make([...plugins, ...sources.plugins], {
        manifestOverrides: overrides.overrides,
        loadBudgetTokens: budget.right
      })
      if (Either.isLeft(built) || sources.errors.length > 0) {
        return fail(
          "boot-error",
          ExitCode.BootError,
          [...sources.errors, ...(Either.isLeft(built) ? built.left.lines : [])],
          [...sources.warnings, ...(Either.isLeft(built) ? built.left.warningLines : [])]
        )
      }
      catalog = built.right
    }

    if (options.loaded !== undefined) {
      for (const name of options.loaded) {
        const entry = catalog.byName.get(name)
        if (entry === undefined || !entry.discoverable) {
          const candidates = catalog.entries.filter((e) => e.discoverable).map((e) => e.name)
          const close = CapabilityIndex.closestNames(name, candidates, 3)
          err(
            `plugboard inspect: --loaded names ${entry === undefined ? `'${name}', which is not a plugin of ${moduleName}` : `'${name}', a silent plugin (never loadable)`}` +
              (close.length > 0 ? `; did you mean ${close.map((c) => `'${c}'`).join(", ")}?` : ".")
          )
          return ExitCode.Usage
        }
      }
    }

    // The ranking serve would use (docs/benchmarks.md#routing-quality): fused with the embedder of
    // --embedding-model or EMBEDDING_MODEL, else lexical. The eval measures that one.
    let evaluation: EvalJson | undefined
    if (options.eval) {
      const model = options.embeddingModel ?? envValue(process.env.EMBEDDING_MODEL)
      let ranking = Ranking.lexical(catalog)
      let close = async () => {}
      if (model !== undefined) {
        const option = options.embeddingModel === undefined ? "EMBEDDING_MODEL" : "--embedding-model"
        progress.phase(`loading the embedding model and embedding the catalog (${option})…`)
        const fused = await loadQueryRanking(catalog, resolve(cwd, model))
        if (Either.isLeft(fused))
          return fail("boot-error", ExitCode.BootError, [
            `[boot-error] ${option}: ${fused.left.reason}: ${fused.left.message}`
          ])
        ranking = fused.right.ranking
        close = fused.right.close
      }
      try {
        const evaluated = await Effect.runPromise(
          Effect.either(
            evaluateRouting(
              catalog,
              { minRecall: options.minRecall, queries, aliases: loaded.aliases, progress },
              ranking
            )
          )
        )
        if (Either.isLeft(evaluated))
          return fail("error", ExitCode.Software, [
            `the embedder failed while ranking: ${evaluated.left.reason}: ${evaluated.left.message}`
          ])
        evaluation = evaluated.right
      } finally {
        await close()
      }
    }

    progress.phase(`loading the ${options.tokenizer} tokenizer…`)
    const counter = await counterFor(options.tokenizer)
    const report = buildReport(catalog, {
      module: moduleName,
      counter,
      basePrompt,
      k: options.k,
      budget: options.budget,
      loaded: options.loaded,
      codeMode: codeMode.right,
      skillsRun: { allowed: skillsRun.right?.skills ?? "none", runnable: runnableSkills },
      eval: options.eval,
      minRecall: options.minRecall,
      queries,
      aliases: loaded.aliases,
      warnings: sourceWarnings,
      progress,
      evaluation
    })
    progress.clear()
    if (options.html !== undefined) {
      const bytes = await writeHtml(resolve(cwd, options.html), "--html", report)
      err(`plugboard inspect: wrote ${options.html} (${Math.round(bytes / 1024)} KB, self-contained).`)
    }
    if (options.json) stdout.write(`${JSON.stringify(report, null, 2)}\n`)
    else {
      const color = stdout.isTTY === true && process.env.NO_COLOR === undefined
      stdout.write(render(report, { top: options.top, all: options.all, color }))
    }
    return report.exitCode
  } catch (thrown) {
    if (thrown instanceof ModuleLoadError) return fail("error", ExitCode.BootError, [thrown.message])
    if (thrown instanceof InputFileError) return fail("error", ExitCode.NoInput, [thrown.message])
    if (thrown instanceof OutputFileError) return fail("error", ExitCode.CantCreate, [thrown.message])
    if (thrown instanceof QueriesFileError) {
      return fail("error", thrown.reason === "unreadable" ? ExitCode.NoInput : ExitCode.DataError, [
        thrown.message
      ])
    }
    const message = thrown instanceof Error ? (thrown.stack ?? thrown.message) : String(thrown)
    return fail("error", ExitCode.Software, [`unexpected failure: ${message}`])
  }
}
