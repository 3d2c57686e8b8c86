/**
 * The embedded default (issue 8, "Embedded default"): with no environment at all the oracle runs
 * the scripted model in router mode over the examples' catalog, credits off, its data under
 * `./.plugboard/`, and answers "What's the weather in Berlin?" with no configuration. Checked in
 * process (the app `serve` builds) and through the README's exact command in a spawned process.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { generateSigner } from "@plugboard/ucan"
import { describe, expect, it } from "vitest"
import { examplePlugins } from "../../../examples/catalog/index.js"
import { createOracleApp, quietLogger } from "../src/index.js"
import { call, collect, headersFor, spawnServe, stream } from "./helpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(here, "../../..")

/** The weather turn's shape: reasoning, the two tool calls, the answer (chunks as one), done. */
const weatherTurn = async (url: string, oracleDid: string) => {
  const headers = await headersFor(await generateSigner(), oracleDid)
  const { response, events } = await stream(url, "berlin", headers, "What's the weather in Berlin?")
  expect(response.status).toBe(200)
  const seen = await collect(events)
  // The run's frame opens the stream, then the router's reasoning (its first model call), which
  // precedes each later step.
  expect(seen[0]?._tag).toBe("run")
  expect(seen[1]?._tag).toBe("reasoning")
  const kinds = seen
    .filter((e) => e._tag !== "reasoning" && e._tag !== "run")
    .map((e) => (e._tag === "tool_call" ? `${e.toolName}:${e.status}` : e._tag))
  expect(kinds.filter((k, i) => k !== "message" || kinds[i - 1] !== "message")).toEqual([
    "load_capability:isRunning",
    "load_capability:done",
    "get_current_weather:isRunning",
    "get_current_weather:done",
    "message",
    "done"
  ])
  const answer = seen
    .filter((e) => e._tag === "message")
    .map((e) => (e as { content: string }).content)
    .join("")
  expect(answer).toContain("Berlin")
}

const expectEmbeddedHealth = async (url: string) => {
  const health = await call(`${url}/health`)
  expect(health.status).toBe(200)
  expect(health.body).toMatchObject({
    status: "ok",
    oracleDid: expect.stringMatching(/^did:key:z6Mk/),
    name: "plugboard",
    model: { id: "scripted-router", provider: "scripted" },
    plugins: examplePlugins.length,
    credits: false
  })
  expect((await call(`${url}/models`)).body).toEqual({
    default: "scripted-router",
    models: [{ id: "scripted-router", provider: "scripted" }]
  })
  return health.body.oracleDid as string
}

describe("embedded default", () => {
  it("in process: an empty environment gives the scripted router, the examples' catalog, credits off", async () => {
    expect(examplePlugins).toHaveLength(55)
    const cwd = mkdtempSync(join(tmpdir(), "plugboard-embedded-"))
    try {
      const app = await createOracleApp({ plugins: examplePlugins, env: {}, cwd, logger: quietLogger })
      try {
        expect(app.config.model.provider).toBe("scripted")
        expect(app.config.dataDir).toBe(join(cwd, ".plugboard"))
        expect(app.creditsEnabled).toBe(false)
        expect(app.catalog.entries).toHaveLength(55)
        const { url } = await app.listen(0, "127.0.0.1")
        const oracleDid = await expectEmbeddedHealth(url)
        expect(oracleDid).toBe(app.oracleDid)
        await weatherTurn(url, oracleDid)
        expect(existsSync(join(cwd, ".plugboard/oracle.key"))).toBe(true)
      } finally {
        await app.close(2_000)
      }
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("the README's command (node --conditions=@plugboard/source scripts/plugboard.mjs serve) with only PORT=0", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "plugboard-readme-"))
    const {
      child,
      url: listening,
      exited,
      output
    } = spawnServe(
      [process.execPath, "--conditions=@plugboard/source", join(ROOT, "scripts/plugboard.mjs"), "serve"],
      cwd,
      { PORT: "0" }
    )
    try {
      const url = await listening
      const out = output()
      expect(out).toMatch(/plugins\s+55 from /)
      expect(out).toMatch(/credits\s+off \(no credits plugin\)/)
      const oracleDid = await expectEmbeddedHealth(url)
      await weatherTurn(url, oracleDid)
      child.kill("SIGTERM")
      expect(await exited).toBe(0)
      expect(existsSync(join(cwd, ".plugboard/oracle.key"))).toBe(true)
      expect(existsSync(join(cwd, ".plugboard/users"))).toBe(true)
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
      rmSync(cwd, { recursive: true, force: true })
    }
  }, 120_000)
})
