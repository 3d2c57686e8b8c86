/**
 * The `run_script` tool of a skill whose folder has scripts (`scripts/*.py`, `*.sh`, `*.js`), when
 * the operator lets that skill run (docs/skills-that-run.md): the model names a script and its
 * arguments, may put files in the scratch directory, and gets back the exit code, the output and
 * the files the script wrote, every part bounded. The script runs in `Sandbox.ts`; this module
 * decides which scripts exist, how each is started, and what the model sees.
 *
 * The scratch directory lives for one turn: the files of one run are there for the next run of
 * the same skill in the same turn (a script that extracts a form's fields, then one that fills
 * it), and a new turn starts empty. The host keeps them in memory, bounded, never on its disk.
 */
import { lstat, readdir, realpath } from "node:fs/promises"
import { dirname, extname, join, sep } from "node:path"
import type { CatalogSource, RuntimeContext } from "@plugboard/core"
import { ToolOutput } from "@plugboard/core"
import { parseAllowHosts } from "./AllowHosts.js"
import {
  runInSandbox,
  type SandboxLimits,
  type SandboxResult,
  SCRATCH_MOUNT,
  SKILL_MOUNT
} from "./Sandbox.js"
import { type ScratchFile, safeRelative } from "./Tar.js"

/** The source name of the tool; core namespaces it (`<skill>__run_script`) when skills share it. */
export const RUN_SCRIPT_TOOL = "run_script"

/** How a script is started, by its extension. */
const KINDS: Readonly<Record<string, "python" | "shell" | "node">> = {
  ".py": "python",
  ".sh": "shell",
  ".js": "node",
  ".mjs": "node",
  ".cjs": "node"
}

/** Arguments a run may pass, and their length: a script's command line, not a payload. */
const MAX_ARGS = 64
const MAX_ARG_CHARS = 4_096
/** Files the model may put in the scratch in one call. */
const MAX_INPUT_FILES = 32
const MIB = 1024 * 1024
/** Address space V8 maps at start beyond its heap (measured: Node 24 starts under 1 GiB, not 512 MiB). */
const V8_RESERVE = 1024 * MIB
/** Turns whose scratch is kept at once; the oldest is dropped first. */
const SCRATCHES = 64

/** How the tool runs scripts: the sandbox, the interpreters, the bounds. */
export interface ScriptRunner {
  /** The path of `bwrap`. */
  readonly bwrap: string
  /** The Python interpreter for `.py` (a venv's `bin/python`, whose venv is mounted read-only); default `python3`. */
  readonly python?: string | undefined
  /** The Node binary for `.js` (its install is mounted read-only); default: the one running the host. */
  readonly node?: string | undefined
  readonly limits: SandboxLimits
  /** Bytes of files returned to the model in one answer; beyond them a file is named, not shown. */
  readonly returnBytes: number
  /**
   * Hosts scripts may reach over HTTP(S) through the sandbox's proxy (`host`, `host:port`,
   * `*.name`: `parseAllowHosts`); empty or absent, no network. A bad entry is a `RangeError` when
   * the tool is made.
   */
  readonly allowHosts?: ReadonlyArray<string> | undefined
}

/** The scripts of a skill folder: `scripts/` and its subfolders, by relative path, sorted. */
export const listScripts = async (rootReal: string): Promise<ReadonlyArray<string>> => {
  const found: string[] = []
  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    if (depth > 4 || found.length >= 500) return
    let entries: ReadonlyArray<{ name: string; isDirectory(): boolean; isFile(): boolean }>
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      if (entry.name.startsWith(".") || entry.name === "__pycache__") continue
      const path = `${rel}/${entry.name}`
      if (entry.isDirectory()) await walk(join(dir, entry.name), path, depth + 1)
      else if (entry.isFile() && KINDS[extname(entry.name)] !== undefined && entry.name !== "__init__.py")
        found.push(path)
    }
  }
  await walk(join(rootReal, "scripts"), "scripts", 0)
  return found.sort()
}

/** The marker of the turn a call belongs to: the id of the last user message, if it has one. */
const turnOf = (context: RuntimeContext): string => {
  const messages = context.history.messages
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as Record<string, unknown> & { getType?: () => string; _getType?: () => string }
    const kind =
      typeof m.getType === "function"
        ? m.getType()
        : typeof m._getType === "function"
          ? m._getType()
          : (m.type ?? m.role)
    if (kind === "human" || kind === "user") return `${i}:${String(m.id ?? "")}`
  }
  return ""
}

const isText = (data: Uint8Array): boolean => {
  if (data.subarray(0, 8192).includes(0)) return false
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(data)
    return true
  } catch {
    return false
  }
}

const MIME: Readonly<Record<string, string>> = {
  ".pdf": "application/pdf",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".zip": "application/zip",
  ".skill": "application/zip",
  ".json": "application/json",
  ".csv": "text/csv",
  ".md": "text/markdown",
  ".txt": "text/plain",
  ".html": "text/html",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i])

/** The model's `files` argument as scratch files, or the sentence saying what is wrong with it. */
export const inputFiles = (value: unknown): ReadonlyArray<ScratchFile> | string => {
  if (value === undefined) return []
  if (!Array.isArray(value)) return "'files' must be a list of {path, text} or {path, base64}."
  if (value.length > MAX_INPUT_FILES) return `'files' may hold at most ${MAX_INPUT_FILES} files.`
  const out: ScratchFile[] = []
  for (const item of value) {
    const f = item as { path?: unknown; text?: unknown; base64?: unknown }
    if (typeof f !== "object" || f === null || typeof f.path !== "string")
      return "Each entry of 'files' needs 'path', a path relative to the scratch directory."
    const path = safeRelative(f.path.replace(/\\/g, "/"))
    if (path === undefined)
      return `'${f.path.slice(0, 200)}' is not a path inside the scratch directory (no absolute path, no '..').`
    if (typeof f.text === "string") out.push({ path, data: new TextEncoder().encode(f.text) })
    else if (typeof f.base64 === "string") out.push({ path, data: Buffer.from(f.base64, "base64") })
    else return `The file '${path}' needs 'text' or 'base64'.`
  }
  return out
}

/** The argument list, or what is wrong with it. */
const argList = (value: unknown): ReadonlyArray<string> | string => {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.some((a) => typeof a !== "string"))
    return "'args' must be a list of strings (the script's command-line arguments)."
  if (value.length > MAX_ARGS) return `'args' may hold at most ${MAX_ARGS} arguments.`
  if (value.some((a: string) => a.length > MAX_ARG_CHARS || a.includes("\0")))
    return `Each argument is at most ${MAX_ARG_CHARS} characters, without NUL: put data in 'files' instead.`
  return value as ReadonlyArray<string>
}

const bytes = (n: number): string => `${n.toLocaleString("en-US")} byte${n === 1 ? "" : "s"}`

const seconds = (ms: number): string =>
  `${(ms / 1000).toLocaleString("en-US", { maximumFractionDigits: 1 })} s`

/** What the model reads: how the run ended, its output, the files it wrote. */
export const describeRun = (
  script: string,
  result: SandboxResult,
  before: ReadonlyArray<ScratchFile>,
  limits: SandboxLimits,
  returnBytes: number
): ToolOutput.ToolOutput => {
  const lines: string[] = []
  const failed = result.stopped !== undefined || result.exitCode !== 0
  if (result.stopped === "timeout")
    lines.push(`${script} was stopped after ${seconds(limits.timeoutMs)} (the time limit of a run).`)
  else if (result.stopped === "output")
    lines.push(
      `${script} was stopped: it wrote more than ${bytes(limits.outputBytes)} of output (the limit of a run); the first ${bytes(limits.outputBytes)} are below.`
    )
  else if (result.stopped === "files")
    lines.push(`${script} was stopped: the files it left are bigger than the scratch directory may hold.`)
  else if (result.stopped === "aborted") lines.push(`${script} was stopped: the turn was aborted.`)
  else if (result.signal === "SIGXCPU" || result.exitCode === 128 + 24 || result.exitCode === 152)
    lines.push(`${script} was killed: it used its ${limits.cpuSeconds} s of CPU time (the limit of a run).`)
  else if (result.exitCode === 125 && result.stderr.includes("[sandbox]"))
    lines.push(`${script} could not be started in the sandbox.`)
  else lines.push(`${script} exited with code ${result.exitCode ?? result.signal ?? "?"}.`)
  if (result.stdout.length > 0) lines.push("", "stdout:", result.stdout.trimEnd())
  if (result.stderr.length > 0) lines.push("", "stderr:", result.stderr.trimEnd())
  if (result.droppedOutputBytes > 0)
    lines.push("", `[${bytes(result.droppedOutputBytes)} more output dropped]`)
  const changed = result.files.filter((f) => {
    const old = before.find((b) => b.path === f.path)
    return old === undefined || !sameBytes(old.data, f.data)
  })
  const blocks: ToolOutput.ContentBlock[] = []
  let budget = returnBytes
  const named: string[] = []
  for (const file of changed) {
    const uri = `scratch:///${file.path}`
    const mimeType = MIME[extname(file.path).toLowerCase()] ?? "application/octet-stream"
    if (file.data.length > budget) {
      named.push(`${file.path} (${bytes(file.data.length)})`)
      blocks.push({ type: "resource_link", uri, name: file.path, mimeType, size: file.data.length })
      continue
    }
    budget -= file.data.length
    blocks.push(
      isText(file.data)
        ? { type: "resource", uri, mimeType, text: new TextDecoder().decode(file.data) }
        : { type: "resource", uri, mimeType, blob: Buffer.from(file.data).toString("base64") }
    )
  }
  if (changed.length > 0)
    lines.push(
      "",
      `Files written in the scratch directory (kept for the next run of this turn): ${changed.map((f) => f.path).join(", ")}.`
    )
  if (named.length > 0)
    lines.push(
      `Too big to return here (the answer holds at most ${bytes(returnBytes)} of files): ${named.join(", ")}.`
    )
  if (result.skipped.length > 0)
    lines.push(`Left out, not regular files: ${result.skipped.slice(0, 10).join(", ")}.`)
  return ToolOutput.make({ content: [{ type: "text", text: lines.join("\n") }, ...blocks], isError: failed })
}

/** The folder a binary's install lives in (`/x/bin/node` → `/x`), mounted read-only beside it. */
const installOf = (binary: string): string => dirname(dirname(binary))

/**
 * The skill's `run_script` tool, or undefined when its folder has no scripts. `rootReal` is the
 * folder's real path.
 */
export const runScriptTool = async (
  skill: string,
  rootReal: string,
  runner: ScriptRunner
): Promise<CatalogSource.SourceTool | undefined> => {
  const allowed = parseAllowHosts(runner.allowHosts ?? [])
  if (allowed.errors.length > 0) throw new RangeError(allowed.errors.join(" "))
  const scripts = await listScripts(rootReal)
  if (scripts.length === 0) return undefined
  const scratches = new Map<string, ReadonlyArray<ScratchFile>>()
  const run = async (args: Readonly<Record<string, unknown>>, context: RuntimeContext) => {
    const script = args.script
    if (typeof script !== "string" || !scripts.includes(script.replace(/^\.\//, "")))
      return ToolOutput.text(
        `'${String(script).slice(0, 200)}' is not a script of the '${skill}' skill. Its scripts: ${scripts.join(", ")}.`,
        true
      )
    const rel = script.replace(/^\.\//, "")
    // The file is checked again now: a link put in place since boot must not lead out.
    const real = await realpath(join(rootReal, rel)).catch(() => undefined)
    const info = real === undefined ? undefined : await lstat(real).catch(() => undefined)
    if (real === undefined || !real.startsWith(rootReal + sep) || info?.isFile() !== true)
      return ToolOutput.text(`${rel} is no longer a file of the '${skill}' skill's folder.`, true)
    const argv = argList(args.args)
    if (typeof argv === "string") return ToolOutput.text(argv, true)
    const given = inputFiles(args.files)
    if (typeof given === "string") return ToolOutput.text(given, true)
    const key = `${context.user.did}\0${context.session.id}\0${turnOf(context)}`
    const kept = scratches.get(key) ?? []
    const files = [...kept.filter((f) => !given.some((g) => g.path === f.path)), ...given]
    const total = files.reduce((n, f) => n + f.data.length, 0)
    if (total > runner.limits.scratchBytes)
      return ToolOutput.text(
        `The files are ${bytes(total)}, more than the scratch directory holds (${bytes(runner.limits.scratchBytes)}).`,
        true
      )
    const inside = `${SKILL_MOUNT}/${rel}`
    const kind = KINDS[extname(rel)]!
    const python = runner.python
    const node = runner.node ?? process.execPath
    const command =
      kind === "python"
        ? [python ?? "python3", inside, ...argv]
        : kind === "node"
          ? [
              node,
              `--max-old-space-size=${Math.max(16, Math.floor(runner.limits.memoryBytes / MIB))}`,
              inside,
              ...argv
            ]
          : ["/bin/sh", inside, ...argv]
    const readOnly =
      kind === "python" && python !== undefined && python.startsWith("/")
        ? [installOf(python)]
        : kind === "node"
          ? [installOf(node)]
          : []
    const result = await runInSandbox({
      bwrap: runner.bwrap,
      folder: rootReal,
      argv: command,
      files,
      // V8 reserves about 1 GiB of address space at start (its code range, WebAssembly): under
      // RLIMIT_DATA at the heap's size Node cannot start, so its heap is bounded by V8's flag.
      limits:
        kind === "node"
          ? { ...runner.limits, memoryBytes: runner.limits.memoryBytes + V8_RESERVE }
          : runner.limits,
      readOnly: readOnly.filter((d) => d !== "/usr" && d !== "/"),
      signal: context.signal,
      allowHosts: runner.allowHosts,
      node
    })
    if (result.stopped === undefined) {
      scratches.delete(key)
      scratches.set(key, result.files)
      while (scratches.size > SCRATCHES) scratches.delete(scratches.keys().next().value!)
    }
    return describeRun(rel, result, files, runner.limits, runner.returnBytes)
  }
  const network =
    allowed.hosts.length === 0
      ? "there is no network."
      : `there is no network but HTTP(S), through the proxy in HTTP_PROXY/HTTPS_PROXY, to: ${allowed.hosts.map((h) => h.entry).join(", ")}.`
  return {
    name: RUN_SCRIPT_TOOL,
    description: `Runs a script of the '${skill}' skill in a sandbox, as its instructions say (\`python scripts/x.py a b\` is script 'scripts/x.py', args ['a','b']). The working directory is a scratch directory, empty at the start of the turn and kept between runs of this turn; put input files there with 'files', and files the script writes there come back. The skill's folder is read-only at ${SKILL_MOUNT}; ${network} Scripts: ${scripts.join(", ")}.`,
    inputSchema: {
      type: "object",
      properties: {
        script: {
          type: "string",
          description: "The script's path in the skill's folder, e.g. 'scripts/extract.py'.",
          enum: [...scripts]
        },
        args: {
          type: "array",
          items: { type: "string" },
          description: "Its command-line arguments; paths are relative to the scratch directory."
        },
        files: {
          type: "array",
          description: `Files to put in the scratch directory (${SCRATCH_MOUNT}) before it runs.`,
          items: {
            type: "object",
            properties: {
              path: { type: "string" },
              text: { type: "string", description: "The file's content as text." },
              base64: { type: "string", description: "Or its bytes, base64." }
            },
            required: ["path"]
          }
        }
      },
      required: ["script"],
      additionalProperties: false
    },
    call: run
  }
}
