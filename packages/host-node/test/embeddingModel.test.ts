/**
 * `EMBEDDING_MODEL` (docs/benchmarks.md#routing-quality): with a model folder, `list_capabilities`' query
 * ranking fuses an embedder's similarity with the lexical one, end to end through a turn; a
 * missing or bad model, or a host without the optional `@plugboard/embeddings`, is a clear error;
 * unset, the ranking stays lexical.
 */
import { execFile } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { definePlugin, defineTool } from "@plugboard/core"
import { ScriptedChatModel, type ScriptedTurn } from "@plugboard/models"
import { Schema } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { bootLines, call, newSession, start, user, weather } from "./helpers.js"

const MODEL =
  process.env.EMBEDDING_MODEL ||
  fileURLToPath(new URL("../../../.plugboard/models/all-MiniLM-L6-v2-int8", import.meta.url))
const modelPresent = existsSync(join(MODEL, "model.onnx")) && existsSync(join(MODEL, "vocab.txt"))

const dir = mkdtempSync(join(tmpdir(), "plugboard-embedding-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const input = Schema.Struct({})
const finance = definePlugin({
  name: "finance",
  manifest: {
    title: "Finance",
    summary: "Stock quotes and cryptocurrency market data.",
    whenToUse: ["Market prices of stocks and coins."]
  },
  tools: [defineTool({ name: "quote", description: "A market quote.", input, handler: () => "1" })]
})

/** The model lists with a query that shares no word with the finance plugin, then answers. */
const respond = (turn: ScriptedTurn) =>
  turn.messages.at(-1)?._getType() === "human"
    ? { tool: "list_capabilities", args: { query: "how much is bitcoin worth" } }
    : "done"

/** The names `list_capabilities` returned in one turn. */
const listed = async (env: Record<string, string>) => {
  const running = await start({ plugins: [weather, finance], model: new ScriptedChatModel({ respond }), env })
  try {
    const u = await user(running.app.oracleDid)
    const sessionId = await newSession(running.url, u.headers)
    const r = await call(`${running.url}/messages/${sessionId}`, {
      method: "POST",
      headers: u.headers,
      body: { message: "Is bitcoin up today?" }
    })
    expect(r.status).toBe(200)
    const history = await call(`${running.url}/messages/${sessionId}`, { headers: u.headers })
    // biome-ignore lint/suspicious/noExplicitAny: the wire's messages are read freely
    const tool = (history.body.messages as Array<any>).find((m) => m.type === "tool")
    return (JSON.parse(tool.content).plugins as Array<{ name: string }>).map((p) => p.name)
  } finally {
    await running.stop()
  }
}

describe("EMBEDDING_MODEL", () => {
  it("a missing folder stops boot, naming the file and the script that fetches it", async () => {
    const lines = await bootLines([weather], { EMBEDDING_MODEL: join(dir, "nowhere") })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(
      /^\[boot-error\] EMBEDDING_MODEL: model-missing: the embedding model \(model\.onnx\) not found at .*nowhere\/model\.onnx \(scripts\/embedding-model\.sh/
    )
  })

  it("a file that is not a model stops boot", async () => {
    const bad = join(dir, "bad")
    mkdirSync(bad, { recursive: true })
    writeFileSync(join(bad, "model.onnx"), "not a model")
    writeFileSync(join(bad, "vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n")
    const lines = await bootLines([weather], { EMBEDDING_MODEL: bad })
    expect(lines[0]).toMatch(
      /^\[boot-error\] EMBEDDING_MODEL: model-invalid: .*model\.onnx is not a model onnxruntime can load/
    )
  })

  it("unset, list_capabilities ranks lexically: no word shared, nothing listed", async () => {
    expect(await listed({})).toEqual([])
  })

  it.skipIf(!modelPresent)("set, list_capabilities ranks by meaning too: finance first", async () => {
    expect((await listed({ EMBEDDING_MODEL: MODEL }))[0]).toBe("finance")
  })

  it("@plugboard/embeddings is an optional peer: without it, EMBEDDING_MODEL is a clear error", async () => {
    const here = import.meta.dirname
    const manifest = JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8"))
    expect(manifest.peerDependenciesMeta["@plugboard/embeddings"]).toEqual({ optional: true })
    expect(manifest.dependencies["@plugboard/embeddings"]).toBeUndefined()
    const script = `
      const { Catalog } = await import("@plugboard/core")
      const { loadQueryRanking } = await import("./src/QueryRanking.ts")
      const r = await loadQueryRanking(Catalog.unsafeMake([]), ${JSON.stringify(MODEL)})
      console.log(JSON.stringify(r._tag === "Left" ? { reason: r.left.reason, message: r.left.message } : "loaded"))
    `
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        "--conditions=@plugboard/source",
        "--import",
        "tsx",
        "--import",
        join(here, "hide-embeddings.mjs"),
        "--input-type=module",
        "-e",
        script
      ],
      { cwd: join(here, "..") }
    )
    expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual({
      reason: "model-missing",
      message:
        "the package @plugboard/embeddings, which runs the model, is not installed (npm install @plugboard/embeddings)"
    })
  })
})
