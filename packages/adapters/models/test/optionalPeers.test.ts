/**
 * The provider SDKs are optional peers: the peer ranges the code names are the ones package.json
 * declares, and a provider whose SDK is missing is a boot-time configuration problem naming the
 * package and the install command, while the other providers and the scripted model still work.
 */
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { PEER_RANGES, providerPackage, resolveSettings } from "../src/index.js"

const here = import.meta.dirname
const manifest = JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8")) as {
  peerDependencies: Record<string, string>
  peerDependenciesMeta: Record<string, { optional: boolean }>
  devDependencies: Record<string, string>
}

describe("provider SDKs as optional peers", () => {
  it("names exactly the peers package.json declares, each optional and installed for the tests", () => {
    expect(PEER_RANGES).toEqual(manifest.peerDependencies)
    for (const name of Object.keys(PEER_RANGES)) {
      expect(manifest.peerDependenciesMeta[name]).toEqual({ optional: true })
      expect(manifest.devDependencies[name]).toBe(manifest.peerDependencies[name])
    }
    expect(providerPackage("openai-compatible")).toEqual({
      name: "@langchain/openai",
      range: "1.5.8",
      installed: true
    })
    expect(providerPackage("scripted")).toBeUndefined()
  })

  it("a missing SDK is a configuration problem for its providers only", async () => {
    const script = `
      const { resolveSettings, makeChatModel } = await import("@plugboard/models")
      const report = (env) => {
        const r = resolveSettings(env)
        return r._tag === "Left" ? r.left : "ok"
      }
      let thrown
      try {
        makeChatModel({ provider: "openai", model: "m", apiKey: "k" })
      } catch (e) {
        thrown = e.name + ": " + e.message
      }
      console.log(JSON.stringify({
        openai: report({ LLM_PROVIDER: "openai", OPENAI_API_KEY: "k" }),
        compatible: report({ LLM_PROVIDER: "openai-compatible", OPENAI_BASE_URL: "http://127.0.0.1:1/v1", LLM_MODEL: "m" }),
        anthropic: report({ LLM_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "k" }),
        scripted: report({}),
        thrown
      }))
    `
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        "--conditions=@plugboard/source",
        "--import",
        "tsx",
        "--import",
        join(here, "hide-openai.mjs"),
        "--input-type=module",
        "-e",
        script
      ],
      { cwd: join(here, "..") }
    )
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!)
    const problem = {
      reason: "missing-package",
      variable: "LLM_PROVIDER",
      message: expect.stringContaining('npm install @langchain/openai@"1.5.8"')
    }
    expect(out.openai).toEqual([problem])
    expect(out.openai[0].message).toMatch(
      /^LLM_PROVIDER=openai needs the package @langchain\/openai, an optional peer/
    )
    expect(out.compatible).toEqual([problem])
    expect(out.anthropic).toBe("ok")
    expect(out.scripted).toBe("ok")
    expect(out.thrown).toMatch(/^ProviderPackageMissing: @langchain\/openai is not installed/)
  })

  it("with every SDK installed, each provider resolves", () => {
    expect(Either.isRight(resolveSettings({ LLM_PROVIDER: "openai", OPENAI_API_KEY: "k" }))).toBe(true)
    expect(Either.isRight(resolveSettings({ LLM_PROVIDER: "ollama" }))).toBe(true)
  })
})
