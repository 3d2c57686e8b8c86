/**
 * Boot and shutdown: manifest errors before config errors, one message per bad variable, route
 * collisions naming both plugins, graceful close of running streams, module loading errors, and
 * `plugboard serve` with an empty environment in a temporary directory (a spawned process).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { definePlugin } from "@plugboard/core"
import { describe, expect, it } from "vitest"
import { loadModule, ModuleLoadError } from "../src/cli/LoadModule.js"
import { createOracleApp, OracleBootError, quietLogger } from "../src/index.js"
import {
  bootLines,
  collect,
  newSession,
  slowJob,
  spawnServe,
  start,
  stream,
  user,
  weather
} from "./helpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(here, "../../..")

const routePlugin = (name: string, path: string) =>
  definePlugin({
    name,
    manifest: { title: name, summary: `Routes of ${name}.`, whenToUse: [`When ${name} is needed.`] },
    routes: [{ method: "GET", path, handler: () => ({ body: {} }) }]
  })

describe("boot", () => {
  it("reports one clear line per malformed variable", async () => {
    const lines = await bootLines([weather], {
      PORT: "eighty",
      THROTTLE_LIMIT: "0",
      THROTTLE_TTL_MS: "-5",
      DISABLE_CREDITS: "maybe",
      LLM_PROVIDER: "skynet",
      MATRIX_BASE_URL: "https://matrix.example",
      SQLITE_MAX_OPEN: "0",
      SQLITE_KEEP_CHECKPOINTS: "all"
    })
    expect(lines).toHaveLength(8)
    for (const name of [
      "PORT",
      "THROTTLE_LIMIT",
      "THROTTLE_TTL_MS",
      "DISABLE_CREDITS",
      "LLM_PROVIDER",
      "MATRIX_USER_ID",
      "SQLITE_MAX_OPEN",
      "SQLITE_KEEP_CHECKPOINTS"
    ]) {
      expect(lines.filter((l) => l.startsWith("[config-error]") && l.includes(name))).toHaveLength(1)
    }
    expect(await bootLines([weather], { LLM_PROVIDER: "openai" })).toEqual([
      expect.stringMatching(/^\[config-error\] OPENAI_API_KEY is required/)
    ])
  })

  it("validates manifests before the environment", async () => {
    const broken = definePlugin({
      name: "broken",
      manifest: {
        title: "Broken",
        summary: "",
        whenToUse: ["When broken."],
        examples: [{ user: "x", tool: "foo" }]
      }
    })
    const lines = await bootLines([weather, broken], { PORT: "eighty" })
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.every((l) => l.startsWith("[boot-error]"))).toBe(true)
    expect(lines).toContain("[boot-error] Plugin 'broken' manifest example references unknown tool 'foo'.")
  })

  it("logs every soft-rule warning as a [boot-warning] line, whether the catalog boots or not", async () => {
    const shouty = definePlugin({
      name: "shouty",
      manifest: {
        title: "Shouty",
        summary: "Says things loudly.",
        whenToUse: ["When asked to shout."],
        tags: ["Loud"]
      }
    })
    const broken = definePlugin({
      name: "broken",
      manifest: { title: "Broken", summary: "", whenToUse: ["x"] }
    })
    for (const plugins of [
      [weather, shouty],
      [weather, shouty, broken]
    ]) {
      const warned: Array<string> = []
      const dir = mkdtempSync(join(tmpdir(), "plugboard-warn-"))
      const logger = { ...quietLogger, warn: (message: string) => void warned.push(message) }
      try {
        const app = await createOracleApp({ plugins, env: { PLUGBOARD_DATA_DIR: dir }, logger }).catch(
          (error: unknown) => {
            expect(error).toBeInstanceOf(OracleBootError)
            return undefined
          }
        )
        expect(app === undefined).toBe(plugins.includes(broken))
        await app?.close(1_000)
        expect(warned.filter((w) => w.startsWith("[boot-warning]") && w.includes("'Loud'"))).toHaveLength(1)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
  })

  it("issue 36 item 14: a tool whose input is not an object, or has a field with no JSON Schema form, stops boot naming plugin, tool and field", async () => {
    const { plugins } = await import("./inspect/fixtures/tool-inputs.js")
    const lines = await bootLines(plugins, {})
    expect(lines).toEqual([
      "[boot-error] Plugin 'reminders' tool 'add_reminder' input is not an object schema: the schema's type must be 'object' (the arguments are an object), and its JSON Schema has type 'string'; use Schema.Struct({ ... }) (one field per argument; a union of shapes becomes one struct with optional fields).",
      "[boot-error] Plugin 'reminders' tool 'snooze' input schema cannot be turned into JSON Schema: field 'until' is DateFromSelf, which has no JSON Schema form (Missing annotation): use Schema.Date (an ISO 8601 string) or Schema.DateFromNumber (epoch milliseconds) instead, or give the tool a jsonSchema."
    ])
  })

  it("a route collision is a boot error naming both plugins", async () => {
    const lines = await bootLines(
      [routePlugin("alpha", "/things/:id"), routePlugin("beta", "/things/:key")],
      {}
    )
    expect(lines).toEqual([
      "[boot-error] Plugin 'beta' route GET /things/:key collides with the same route of plugin 'alpha'."
    ])
    const builtin = await bootLines([routePlugin("gamma", "/health")], {})
    expect(builtin).toEqual([
      "[boot-error] Plugin 'gamma' route GET /health collides with the server's own route."
    ])
  })

  it("module loading errors say what is wrong", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-mod-"))
    try {
      await expect(loadModule(join(dir, "missing.ts"), dir)).rejects.toThrow(/Cannot find module/)
      writeFileSync(join(dir, "empty.mjs"), "export const answer = 42\n")
      const empty = await loadModule(join(dir, "empty.mjs"), dir).catch((e: unknown) => e)
      expect(empty).toBeInstanceOf(ModuleLoadError)
      expect((empty as ModuleLoadError).message).toMatch(/exports no plugins.*'answer'/)
      writeFileSync(join(dir, "throws.mjs"), "throw new Error('boom')\n")
      await expect(loadModule(join(dir, "throws.mjs"), dir)).rejects.toThrow(/failed to load: boom/)
      const ok = await loadModule(join(ROOT, "examples/plugins/weather.ts"), dir)
      expect(ok.kind === "plugins" && ok.plugins.map((p) => p.name)).toContain("weather")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("graceful close", () => {
  it("aborts streams still running at the deadline; they end with done; new requests are refused", async () => {
    const server = await start({ plugins: [weather, slowJob] })
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    const { events } = await stream(server.url, session, u.headers, "Run the slow job")
    const seen: Array<{ _tag: string }> = []
    const reading = (async () => {
      for await (const e of events) {
        seen.push(e)
        if (e._tag === "tool_call" && seen.filter((x) => x._tag === "tool_call").length === 1)
          void server.stop()
      }
    })()
    await reading
    expect(seen.at(-1)?._tag).toBe("done")
    await server.stop()
    await expect(fetch(`${server.url}/health`)).rejects.toThrow()
  })
})

describe("plugboard serve", () => {
  const serve = (cwd: string, env: Record<string, string>) =>
    spawnServe(
      [
        join(ROOT, "node_modules/.bin/tsx"),
        "--conditions=@plugboard/source",
        join(ROOT, "packages/host-node/src/cli/main.ts"),
        "serve"
      ],
      cwd,
      env
    )

  it("boots with an empty environment in a fresh directory, answers /health, keeps its key across restarts", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "plugboard-serve-"))
    try {
      const first = serve(cwd, { PORT: "0" })
      const url = await first.url
      const health = (await (await fetch(`${url}/health`)).json()) as { status: string; oracleDid: string }
      expect(health.status).toBe("ok")
      expect(health.oracleDid).toMatch(/^did:key:z6Mk/)
      first.child.kill("SIGTERM")
      expect(await first.exited).toBe(0)
      expect(existsSync(join(cwd, ".plugboard/oracle.key"))).toBe(true)
      expect(existsSync(join(cwd, ".plugboard/users"))).toBe(true)
      const key = readFileSync(join(cwd, ".plugboard/oracle.key"), "utf8")

      const second = serve(cwd, { PORT: "0" })
      const again = (await (await fetch(`${await second.url}/health`)).json()) as { oracleDid: string }
      expect(again.oracleDid).toBe(health.oracleDid)
      expect(readFileSync(join(cwd, ".plugboard/oracle.key"), "utf8")).toBe(key)
      second.child.kill("SIGINT")
      expect(await second.exited).toBe(0)
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  }, 150_000)

  it("prints every configuration problem and exits non-zero", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "plugboard-serve-"))
    try {
      const bad = serve(cwd, { PORT: "x", THROTTLE_LIMIT: "many" })
      await expect(bad.url).rejects.toThrow()
      expect(await bad.exited).toBe(1)
      expect(bad.output()).toMatch(/\[config-error\] PORT must be/)
      expect(bad.output()).toMatch(/\[config-error\] THROTTLE_LIMIT must be/)
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  }, 90_000)
})

// A full turn still works after all of the above (no shared state between servers).
it("a fresh server answers a streamed turn", async () => {
  const server = await start()
  try {
    const u = await user(server.app.oracleDid)
    const events = await collect(
      (await stream(server.url, "s1", u.headers, "What's the weather in Berlin?")).events
    )
    expect(events.at(-1)?._tag).toBe("done")
  } finally {
    await server.stop()
  }
})
