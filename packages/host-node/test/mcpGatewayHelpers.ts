/**
 * What the `plugboard mcp` tests share: the CLI as a client starts it (its command line, run from
 * the repository's sources in a folder of the test's own, with only PATH and HOME set), the CLI
 * serving HTTP until stopped, deferred gates, and the MCP Inspector's CLI run one command at a time.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { ROOT } from "./runCli.js"

/** The module every client test serves: the reference weather plugin, on-demand, no always tier. */
export const WEATHER = join(ROOT, "examples/plugins/weather.ts")

/** The three meta-tools, all a client lists at connect on a catalog without always-tier tools. */
export const META = ["list_capabilities", "load_capability", "call_tool"]

/** The command line that starts the gateway (what a client's config holds). */
export const gatewayCommand = (...args: ReadonlyArray<string>) => ({
  command: process.execPath,
  args: ["--conditions=@plugboard/source", join(ROOT, "scripts/plugboard.mjs"), "mcp", ...args]
})

/** The environment a test gives the gateway: nothing of the developer's shell. */
export const cleanEnv = (home: string, extra: Record<string, string> = {}): Record<string, string> => ({
  PATH: process.env.PATH ?? "",
  HOME: home,
  ...extra
})

/** A promise and what settles it: a gate a test waits on instead of sleeping. */
export const deferred = <A = void>() => {
  let resolve: (value: A) => void = () => {}
  const promise = new Promise<A>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/** A gateway serving HTTP in a child process, until `stop`. */
export interface HttpGateway {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
  readonly stop: () => Promise<number | null>
}

/**
 * Starts `plugboard mcp --http 0 ...` in `cwd` and resolves once it says where it listens; rejects
 * with its output if it exits first.
 */
export const startHttpGateway = (
  cwd: string,
  args: ReadonlyArray<string>,
  env: Record<string, string> = {}
): Promise<HttpGateway> =>
  new Promise((resolve, reject) => {
    const { command, args: full } = gatewayCommand(...args)
    const child = spawn(command, full, { cwd, env: cleanEnv(cwd, env), stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      const match = /listening on (http:\/\/\S+\/mcp)/.exec(output)
      if (match !== null) {
        child.stdout.off("data", onData)
        resolve({
          url: match[1]!,
          child,
          output: () => output,
          stop: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
            return exited
          }
        })
      }
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    void exited.then((code) =>
      reject(new Error(`plugboard mcp exited with ${code} before listening:\n${output}`))
    )
  })

const require = createRequire(import.meta.url)

/** The MCP Inspector's entry (its `mcp-inspector` bin), run by this Node. */
export const inspectorEntry = (): string => {
  const manifest = require.resolve("@modelcontextprotocol/inspector/package.json")
  const bin = (JSON.parse(readFileSync(manifest, "utf8")) as { bin: Record<string, string> }).bin[
    "mcp-inspector"
  ]!
  return join(dirname(manifest), bin)
}

/** The Inspector needs Node 22.19 or later (its `engines`). */
export const inspectorRuns = (): boolean => {
  const [major, minor] = process.versions.node.split(".").map(Number) as [number, number]
  return major > 22 || (major === 22 && minor >= 19)
}

/**
 * One Inspector CLI command: a fresh connection (and, over stdio, a fresh gateway process).
 * Resolves with the result it printed as JSON; rejects with its output when it fails.
 */
// biome-ignore lint/suspicious/noExplicitAny: the Inspector's JSON is read freely
export const inspect = (cwd: string, args: ReadonlyArray<string>): Promise<any> =>
  new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [inspectorEntry(), "--cli", ...args],
      { cwd, env: cleanEnv(cwd), timeout: 60_000 },
      (error, stdout, stderr) => {
        let result: unknown
        try {
          result = JSON.parse(stdout)
        } catch {
          reject(
            new Error(
              `mcp-inspector ${args.join(" ")} printed no JSON (${error?.message ?? "exit 0"}):\n${stdout}\n${stderr}`
            )
          )
          return
        }
        // A tool's error answer is still an answer: the Inspector prints it, and exits non-zero.
        if (error !== null && (result as { isError?: unknown }).isError !== true) {
          reject(new Error(`mcp-inspector ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`))
          return
        }
        resolve(result)
      }
    )
  })

/** `plugboard <args>` run as `runCli` runs it, with more variables in its environment. */
export const runCliWith = (
  cwd: string,
  env: Record<string, string>,
  ...args: ReadonlyArray<string>
): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((done) => {
    execFile(
      process.execPath,
      ["--conditions=@plugboard/source", join(ROOT, "scripts/plugboard.mjs"), ...args],
      { cwd, env: cleanEnv(cwd, env), timeout: 120_000 },
      (error, stdout, stderr) =>
        done({ code: error === null ? 0 : ((error as { code?: number }).code ?? -1), stdout, stderr })
    )
  })
