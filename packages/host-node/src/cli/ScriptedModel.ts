/**
 * `plugboard scripted-model [module] [--port N] [--script FILE] [--no-catalog]`: the offline
 * scripted model served as an OpenAI-compatible chat completions endpoint on 127.0.0.1
 * (`serveOpenAiWire`), so that any agent framework can be pointed at it with no key and no
 * network (docs/scripted-model-openai-wire.md). By default it is the router the demo's oracle
 * runs, over the module's catalog (the examples' catalog when none is given); `--no-catalog`
 * routes from the tools each request offers; `--script` replays a JSON file of steps instead.
 *
 * It imports neither the oracle server nor storage: only the models package and the module.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { Catalog, describe } from "@plugboard/core"
import { OpenAiWireError, ScriptedChatModel, type ScriptStep, serveOpenAiWire } from "@plugboard/models"
import { Either, ParseResult, Schema } from "effect"
import type { CliIO } from "./Commands.js"
import { parseFlags, wholeNumber } from "./Flags.js"
import { displayPath, loadModule } from "./LoadModule.js"
import { signalled } from "./Signals.js"
import { UsageError } from "./UsageError.js"

/** The port when `--port` is not given: next to the oracle's 3000, so both can run. */
export const DEFAULT_SCRIPTED_MODEL_PORT = 3100

const ToolCall = Schema.Struct({
  tool: Schema.String,
  args: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
const Action = Schema.Union(Schema.String, ToolCall, Schema.Array(ToolCall))
/** One step of a script file: an answer, a call or calls, either with reasoning, or an error. */
const Step = Schema.Union(
  Action,
  Schema.Struct({ reasoning: Schema.String, reply: Action }),
  Schema.Struct({ error: Schema.String })
)
const ScriptFile = Schema.Array(Step)

/**
 * The steps of a script file: a JSON array whose items are what `ScriptedChatModel.script` takes
 * (a string answers, `{ "tool", "args" }` or an array of them calls, `{ "reasoning", "reply" }`
 * adds reasoning), plus `{ "error": "..." }` for a call that fails with that message.
 */
export const readScript = (file: string, cwd: string): ReadonlyArray<ScriptStep> => {
  const path = resolve(cwd, file)
  let json: unknown
  try {
    json = JSON.parse(readFileSync(path, "utf8"))
  } catch (error) {
    throw new UsageError(`Cannot read the script ${displayPath(path, cwd)}: ${describe(error)}.`)
  }
  const decoded = Schema.decodeUnknownEither(ScriptFile)(json)
  if (Either.isLeft(decoded)) {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
    const where = issue === undefined || issue.path.length === 0 ? "" : ` at [${issue.path.join("][")}]`
    throw new UsageError(
      `The script ${displayPath(path, cwd)} is not a list of steps${where}: each step is a string, {"tool","args"}, an array of those, {"reasoning","reply"} or {"error"}.`
    )
  }
  if (decoded.right.length === 0) throw new UsageError(`The script ${displayPath(path, cwd)} has no step.`)
  return decoded.right.map((step) =>
    typeof step === "object" && "error" in step ? new Error(step.error) : (step as ScriptStep)
  )
}

/** The meta-tools as a client offers them, for the banner's example request. */
const META_TOOLS = ["list_capabilities", "load_capability"]
  .map((name) => `{"type":"function","function":{"name":"${name}"}}`)
  .join(",")

/** What the command prints once listening: where, what, and how to point a client at it. */
const banner = (url: string, modelId: string, what: readonly [string, string]): string =>
  [
    `plugboard scripted model on ${url} (OpenAI chat completions, no key needed)`,
    `  model    ${modelId}`,
    `  ${what[0].padEnd(7)}  ${what[1]}`,
    "Point a client at it: baseURL " + url + ", any API key, e.g.",
    `  OPENAI_BASE_URL=${url} OPENAI_API_KEY=none <your agent>`,
    `  curl -s ${url}/chat/completions -H 'content-type: application/json' -d '{"model":"${modelId}",` +
      `"messages":[{"role":"user","content":"What is the weather in Berlin?"}],"tools":[${META_TOOLS}]}'`,
    "Each request is logged below. Stop with Ctrl-C.",
    ""
  ].join("\n")

/**
 * Runs the command until SIGINT / SIGTERM; 0 once stopped, 1 when the port cannot be listened
 * on or the catalog does not build (the lines say why). A bad command line is a `UsageError`, a
 * module that does not load a `ModuleLoadError`.
 */
export const scriptedModel = async (argv: ReadonlyArray<string>, io: CliIO): Promise<number> => {
  const { positional, flags } = parseFlags(argv, ["port", "script"], ["no-catalog"])
  if (positional.length > 1) throw new UsageError("scripted-model takes at most one module.")
  const port =
    flags.port === undefined ? DEFAULT_SCRIPTED_MODEL_PORT : wholeNumber("--port", flags.port, 0, 65535)
  if (flags.script !== undefined && (positional.length > 0 || flags["no-catalog"] !== undefined))
    throw new UsageError("--script replays its steps: it takes no module and no --no-catalog.")
  if (flags["no-catalog"] !== undefined && positional.length > 0)
    throw new UsageError("--no-catalog routes without a catalog: it takes no module.")

  let model: ScriptedChatModel
  let what: readonly [string, string]
  if (flags.script !== undefined) {
    const steps = readScript(flags.script, io.cwd)
    model = ScriptedChatModel.script(steps)
    what = [
      "script",
      `the ${steps.length} step(s) of ${flags.script}, one per request, then 500 script_exhausted`
    ]
  } else if (flags["no-catalog"] !== undefined) {
    model = ScriptedChatModel.router({}, { maxRecordedCalls: 100 })
    what = [
      "routes",
      "over the tools each request offers (list_capabilities, load_capability, then the tool)"
    ]
  } else {
    const loaded = await loadModule(positional[0], io.cwd)
    const built = loaded.kind === "catalog" ? Either.right(loaded.catalog) : Catalog.make(loaded.plugins)
    if (Either.isLeft(built)) {
      for (const line of built.left.lines) io.err(`${line}\n`)
      return 1
    }
    // A server keeps one model for its lifetime: bound the log of recorded calls.
    model = ScriptedChatModel.router({ catalog: built.right }, { maxRecordedCalls: 100 })
    what = [
      "routes",
      `over ${built.right.entries.length} plugins from ${displayPath(loaded.file, io.cwd)}, and any other tool a request offers`
    ]
  }

  let server: Awaited<ReturnType<typeof serveOpenAiWire>>
  try {
    server = await serveOpenAiWire(model, { port, log: (line) => io.out(`${line}\n`) })
  } catch (error) {
    if (error instanceof OpenAiWireError && error.reason === "listen") {
      const hint =
        error.code === "EADDRINUSE"
          ? `the port is already in use; pass --port with another (0 = any free port).`
          : error.message
      io.err(`[boot-error] Cannot listen on 127.0.0.1:${port}: ${hint}\n`)
      return 1
    }
    throw error
  }
  io.out(banner(server.url, server.modelId, what))
  io.err(`\n${await signalled()}: stopping.\n`)
  await server.close()
  io.out("stopped.\n")
  return 0
}
