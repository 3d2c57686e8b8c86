/**
 * What the script tests share: the real bubblewrap of the machine (CI installs it; elsewhere the
 * tests are skipped with a note), the venv `scripts/skills-venv.sh` builds, a runner with small
 * bounds, and a context for a turn.
 */
import { existsSync } from "node:fs"
import { chmod } from "node:fs/promises"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { makeRuntimeContext, type RuntimeContext, ToolOutput } from "@plugboard/core"
import {
  DEFAULT_LIMITS,
  findBwrap,
  type LoadedSkills,
  loadSkills,
  type SandboxLimits,
  type ScriptRunner
} from "../src/index.js"
import { tempDir } from "./helpers.js"

const repo = join(dirname(fileURLToPath(import.meta.url)), "../../../..")

/** The vendored Apache-2.0 skill with scripts (test/vendored/skill-creator, LICENSE.txt kept). */
export const VENDORED = join(dirname(fileURLToPath(import.meta.url)), "vendored")

/** `bwrap` on PATH; in CI its absence fails the suite rather than skipping it. */
export const BWRAP = findBwrap()
if (BWRAP === undefined && process.env.CI === "true")
  throw new Error("bubblewrap is not installed: .ci/run installs it (apt-get install bubblewrap)")

/** The skills venv's python (SKILLS_RUN_PYTHON, else the one scripts/skills-venv.sh builds). */
export const PYTHON =
  process.env.SKILLS_RUN_PYTHON ??
  (existsSync(join(repo, ".plugboard/skills-venv/bin/python"))
    ? join(repo, ".plugboard/skills-venv/bin/python")
    : undefined)
if (PYTHON === undefined && process.env.CI === "true")
  throw new Error("the skills venv is missing: .ci/run builds it (scripts/skills-venv.sh)")

/** Bounds small enough for tests. */
export const TEST_LIMITS: SandboxLimits = {
  ...DEFAULT_LIMITS,
  timeoutMs: 10_000,
  cpuSeconds: 2,
  memoryBytes: 256 * 1024 * 1024,
  outputBytes: 64 * 1024,
  scratchBytes: 8 * 1024 * 1024,
  fileBytes: 4 * 1024 * 1024,
  processes: 32
}

/**
 * The Node for `.js` scripts: SKILLS_RUN_NODE (the copy scripts/skills-venv.sh puts where the
 * sandbox's user can reach it), else the one running the tests.
 */
export const NODE = process.env.SKILLS_RUN_NODE

/** A runner on the machine's bwrap; `more` sets its other fields (`allowHosts`). */
export const runner = (
  limits: Partial<SandboxLimits> = {},
  more: Partial<ScriptRunner> = {}
): ScriptRunner => ({
  bwrap: BWRAP ?? "bwrap",
  python: PYTHON,
  node: NODE,
  limits: { ...TEST_LIMITS, ...limits },
  returnBytes: 256 * 1024,
  ...more
})

/** A context for a turn of `session`, whose last user message is `turn`. */
export const turnContext = (
  options: { session?: string; turn?: string; signal?: AbortSignal } = {}
): RuntimeContext =>
  makeRuntimeContext({
    state: {
      messages: [{ id: options.turn ?? "m1", type: "human", content: "go" }],
      config: { did: "did:key:user" },
      client: "portal",
      loadedPlugins: []
    } as never,
    sessionId: options.session ?? "s1",
    did: "did:key:user",
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })

/** The `run_script` tool of the one skill of `dir`, through core's derivation. */
/** What `runScriptOf` gives: the spec, what loading said, and a caller of the tool. */
export interface RunScriptHarness {
  readonly spec: LoadedSkills["specs"][number]
  readonly loaded: LoadedSkills
  readonly run: (
    args: Record<string, unknown>,
    context?: RuntimeContext
  ) => Promise<{ readonly out: ToolOutput.ToolOutput; readonly text: string; readonly isError: boolean }>
}

export const runScriptOf = async (
  dir: string,
  limits: Partial<SandboxLimits> = {},
  more: Partial<ScriptRunner> = {}
): Promise<RunScriptHarness> => {
  const loaded = await loadSkills(dir, { run: { runner: runner(limits, more), skills: "all" } })
  if (loaded.errors.length > 0) throw new Error(loaded.errors.join("\n"))
  const spec = loaded.specs[0]!
  const tool = spec.tools.find((t) => t.name === "run_script")
  if (tool === undefined) throw new Error(`${spec.name} has no run_script tool`)
  return {
    spec,
    loaded,
    run: async (args: Record<string, unknown>, context: RuntimeContext = turnContext()) => {
      const out = await tool.call(args, context)
      if (!ToolOutput.isToolOutput(out)) throw new Error("not a ToolOutput")
      return { out, text: ToolOutput.toText(out), isError: out.isError }
    }
  }
}

/**
 * A temporary skills folder the sandbox's user can read: `mkdtemp` makes it 0700, and when the
 * host is root the sandbox runs as uid 65534, which must read the skill folder.
 */
export const sandboxDir = async (): Promise<string> => {
  const dir = await tempDir()
  await chmod(dir, 0o755)
  return dir
}
