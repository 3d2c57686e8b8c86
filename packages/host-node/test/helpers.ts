/** Black-box helpers: a real server on 127.0.0.1 (random port) over a temporary data directory. */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { definePlugin, defineTool, type EventSink, type Plugin } from "@plugboard/core"
import { generateSigner, mintInvocation, type Signer } from "@plugboard/ucan"
import { Schema } from "effect"
import { weather } from "../../../examples/plugins/weather.js"
import { readSse } from "../src/cli/Sse.js"
import {
  createOracleApp,
  type OracleApp,
  type OracleAppOptions,
  OracleBootError,
  quietLogger
} from "../src/index.js"

export { weather }

/** A running app, its URL, and cleanup. */
export interface Running {
  readonly app: OracleApp
  readonly url: string
  readonly dir: string
  readonly stop: () => Promise<void>
}

/**
 * Starts an app with `plugins` (default: weather) on a random port; env defaults keep limits out
 * of the way (set a variable to `undefined` to get the server's own default).
 */
export const start = async (
  options: Partial<OracleAppOptions> & { readonly env?: Record<string, string | undefined> } = {}
): Promise<Running> => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-host-"))
  const app = await createOracleApp({
    plugins: [weather],
    logger: quietLogger,
    ...options,
    env: { PLUGBOARD_DATA_DIR: dir, THROTTLE_LIMIT: "1000", SSE_HEARTBEAT_MS: "15000", ...options.env }
  })
  const { url } = await app.listen(0, "127.0.0.1")
  return {
    app,
    url,
    dir,
    stop: async () => {
      await app.close(2_000)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Boots an app with `plugins` in a fresh data directory and returns its boot-error lines: `[]`
 * when it boots (it is closed again at once). Any other failure is rethrown.
 */
export const bootLines = async (
  plugins: ReadonlyArray<Plugin>,
  env: Record<string, string> = {}
): Promise<ReadonlyArray<string>> => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-boot-"))
  try {
    const app = await createOracleApp({
      plugins,
      env: { PLUGBOARD_DATA_DIR: dir, ...env },
      logger: quietLogger
    })
    await app.close(1_000)
    return []
  } catch (error) {
    if (!(error instanceof OracleBootError)) throw error
    return error.lines
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A user: its signer and headers carrying a fresh token for `audience`. */
export const user = async (audience: string) => {
  const signer = await generateSigner()
  return { signer, did: signer.did(), headers: await headersFor(signer, audience) }
}

/** Headers with a fresh invocation of `signer` for `audience`. */
export const headersFor = async (signer: Signer, audience: string, ttlSeconds = 600) => ({
  authorization: `Bearer ${await mintInvocation({ issuer: signer, audience, ttlSeconds })}`,
  "x-auth-type": "ucan",
  "content-type": "application/json"
})

/** A JSON request; returns status, headers and parsed body (or the raw text when not JSON). */
export const call = async (
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are JSON the tests read freely
): Promise<{ status: number; headers: globalThis.Headers; body: any }> => {
  const response = await fetch(url, {
    method: init.method ?? "GET",
    headers: init.headers ?? {},
    ...(init.body === undefined
      ? {}
      : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) })
  })
  const text = await response.text()
  // biome-ignore lint/suspicious/noExplicitAny: see above
  let body: any
  try {
    body = JSON.parse(text)
  } catch {
    body = text
  }
  return { status: response.status, headers: response.headers, body }
}

/** Posts a streamed message; returns the response headers and an async list of its events. */
export const stream = async (
  url: string,
  sessionId: string,
  headers: Record<string, string>,
  message: string
) => {
  const response = await fetch(`${url}/messages/${sessionId}`, {
    method: "POST",
    headers,
    body: JSON.stringify({ message, stream: true })
  })
  return { response, events: readSse(response.body!) }
}

/** Every event of a stream. */
export const collect = async (events: AsyncIterable<EventSink.AgentEvent>) => {
  const out: Array<EventSink.AgentEvent> = []
  for await (const e of events) out.push(e)
  return out
}

/** Creates a session for `headers`' user. */
export const newSession = async (url: string, headers: Record<string, string>): Promise<string> => {
  const r = await call(`${url}/sessions`, { method: "POST", headers, body: {} })
  if (r.status !== 201) throw new Error(`session: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.sessionId
}

/**
 * An always-visible plugin whose one tool runs until its turn is aborted (or 30 s pass), then
 * takes `cleanupMs` to let go, as a job stopping its work does: the router calls it for "Run the
 * slow job".
 */
export const slowJobWith = (cleanupMs: number): Plugin =>
  definePlugin({
    name: "slow-job",
    manifest: {
      title: "Slow job",
      summary: "Runs a slow background job.",
      whenToUse: ["When asked to run the slow job."],
      examples: [{ user: "Run the slow job", tool: "run_slow_job", args: {} }],
      tags: ["slow", "job"],
      visibility: "always"
    },
    tools: [
      defineTool({
        name: "run_slow_job",
        description: "Runs the slow job until it finishes.",
        input: Schema.Struct({}),
        handler: (_input, context) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => resolve("finished"), 30_000)
            context.signal.addEventListener("abort", () => {
              clearTimeout(timer)
              const cancelled = () => reject(new Error("the job was cancelled"))
              if (cleanupMs > 0) setTimeout(cancelled, cleanupMs)
              else cancelled()
            })
          })
      })
    ]
  })

/** The slow job letting go at once when its turn is aborted. */
export const slowJob: Plugin = slowJobWith(0)

/**
 * Spawns `plugboard serve` as a process (`command`: the program and its arguments) with exactly
 * `env` (plus PATH); `url` resolves from its "listening on" line, or rejects with its output when
 * it exits first or does not start within a minute.
 */
export const spawnServe = (
  command: readonly [string, ...Array<string>],
  cwd: string,
  env: Record<string, string>
) => {
  const [program, ...args] = command
  const child = spawn(program, args, {
    cwd,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout.on("data", (d) => {
    out += d.toString()
  })
  child.stderr.on("data", (d) => {
    out += d.toString()
  })
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)))
  const url = new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 60_000)
    child.stdout.on("data", () => {
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) {
        clearTimeout(timer)
        resolveUrl(match[1]!)
      }
    })
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`serve exited with ${code}:\n${out}`))
    })
  })
  return { child, url, exited, output: () => out }
}

/** One record a `recordingLogger` kept. */
export interface LogRecord {
  readonly level: string
  readonly message: string
  readonly fields?: Record<string, unknown>
}

/** A logger that keeps every record (and prints nothing). */
export const recordingLogger = () => {
  const records: Array<LogRecord> = []
  const at =
    (level: string) =>
    (message: string, fields?: Record<string, unknown>): void =>
      void records.push({ level, message, ...(fields === undefined ? {} : { fields }) })
  return {
    records,
    logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }
  }
}
