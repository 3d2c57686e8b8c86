/**
 * The variable list (`VARIABLES`: docs/configuration.md, `plugboard --help`) is what the server
 * reads: `load()` runs under a provider that records every name it asks for, over configurations
 * that reach each conditional branch (a provider chosen, Matrix on), and the names asked equal
 * the list's.
 */
import { ConfigError, ConfigProvider, Effect, HashSet } from "effect"
import { describe, expect, it } from "vitest"
import { load, VARIABLES } from "../src/Config.js"

const reads = (env: Record<string, string>): Set<string> => {
  const asked = new Set<string>()
  const flat = ConfigProvider.makeFlat({
    load: (path, primitive, split) => {
      const name = path.join("_")
      asked.add(name)
      const value = env[name]
      if (value === undefined) return Effect.fail(ConfigError.MissingData([...path], `${name} is not set`))
      const parts = split ? value.split(",") : [value]
      return Effect.forEach(parts, (part) =>
        Effect.mapError(primitive.parse(part.trim()), (e) => ConfigError.prefixed(e, [...path]))
      )
    },
    enumerateChildren: () => Effect.succeed(HashSet.empty()),
    patch: { _tag: "Empty" } as never
  })
  Effect.runSync(Effect.either(load("/tmp")).pipe(Effect.withConfigProvider(ConfigProvider.fromFlat(flat))))
  return asked
}

describe("the variables the server reads", () => {
  it("lists exactly the variables the server reads", () => {
    const asked = new Set<string>()
    const configurations: Array<Record<string, string>> = [
      {},
      { LLM_PROVIDER: "openai", OPENAI_API_KEY: "k" },
      { LLM_PROVIDER: "openai-compatible", LLM_BASE_URL: "http://127.0.0.1:1/v1", LLM_MODEL: "m" },
      { LLM_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "k" },
      { LLM_PROVIDER: "ollama" },
      { MATRIX_BASE_URL: "http://127.0.0.1:1", MATRIX_USER_ID: "@o:x", MATRIX_ACCESS_TOKEN: "t" }
    ]
    for (const env of configurations) for (const name of reads(env)) asked.add(name)
    // A row may name several variables read together: `OPENAI_API_KEY / OPENAI_BASE_URL`.
    const listed = new Set(VARIABLES.flatMap((v) => v.name.split(" / ")))
    expect([...asked].filter((name) => !listed.has(name)).sort()).toEqual([])
    expect([...listed].filter((name) => !asked.has(name)).sort()).toEqual([])
  })
})
