/**
 * `inspect --eval` measures the ranking the host gives the model (issue 36, item 21): with
 * `EMBEDDING_MODEL` (or `--embedding-model DIR`) set, `list_capabilities` ranks by fusion, so the
 * eval does too and says so; unset, both are lexical and the report says that. Through the real
 * CLI (`pnpm plugboard inspect`), as an operator types it.
 */
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { fixture, ROOT } from "./helpers.js"

const MODEL = process.env.EMBEDDING_MODEL || join(ROOT, ".plugboard", "models", "all-MiniLM-L6-v2-int8")
const modelPresent = existsSync(join(MODEL, "model.onnx")) && existsSync(join(MODEL, "vocab.txt"))

const typed = (env: Record<string, string | undefined>, ...argv: ReadonlyArray<string>) => {
  const { EMBEDDING_MODEL: _, ...rest } = process.env
  const run = spawnSync("pnpm", ["-s", "plugboard", "inspect", ...argv], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...rest, NO_COLOR: "1", ...env }
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

const evalOf = (stdout: string) =>
  JSON.parse(stdout).eval as {
    ranking: { kind: string; embedder: string | null; label: string }
    queries: { recallAt1: number; recallAtK: number }
    examples: { queries: number }
  }

const ARGS = [fixture("meaning.ts"), "--queries", fixture("queries-meaning.jsonl")]

describe("issue 36 item 21: inspect --eval measures the ranking the model gets", () => {
  it("issue 36 item 21: unset, the eval is lexical and says so", () => {
    const run = typed({}, ...ARGS)
    expect(run.code).toBe(0)
    expect(run.stdout).toContain("Routing quality (list_capabilities' ranking: lexical)")
    const json = evalOf(typed({}, ...ARGS, "--json").stdout)
    expect(json.ranking).toEqual({ kind: "lexical", embedder: null, label: "lexical" })
    expect(json.queries.recallAt1).toBeCloseTo(1 / 3)
  })

  it.skipIf(!modelPresent)(
    "issue 36 item 21: with EMBEDDING_MODEL set, through the real CLI, the eval reports the fused figure, which differs from the lexical one",
    () => {
      const lexical = evalOf(typed({}, ...ARGS, "--json").stdout)
      const run = typed({ EMBEDDING_MODEL: MODEL }, ...ARGS, "--json")
      expect(run.code).toBe(0)
      const fused = evalOf(run.stdout)
      expect(fused.ranking).toEqual({
        kind: "fused",
        embedder: "all-MiniLM-L6-v2-int8",
        label: "fused with all-MiniLM-L6-v2-int8 (weight 0.6)"
      })
      expect(fused.queries.recallAt1).toBe(1)
      expect(fused.queries.recallAt1).not.toBe(lexical.queries.recallAt1)
      const text = typed({ EMBEDDING_MODEL: MODEL }, ...ARGS)
      expect(text.stdout).toContain(
        "Routing quality (list_capabilities' ranking: fused with all-MiniLM-L6-v2-int8 (weight 0.6))"
      )
    }
  )

  it.skipIf(!modelPresent)("issue 36 item 21: --embedding-model DIR does the same as EMBEDDING_MODEL", () => {
    const fused = evalOf(typed({}, ...ARGS, "--embedding-model", MODEL, "--json").stdout)
    expect(fused.ranking.kind).toBe("fused")
    expect(fused.queries.recallAt1).toBe(1)
  })

  it("issue 36 item 21: a model that is not there stops inspect as it stops serve (exit 2)", () => {
    const run = typed({ EMBEDDING_MODEL: join(ROOT, "no-such-model") }, ...ARGS)
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/\[boot-error\] EMBEDDING_MODEL: model-missing: .*no-such-model/)
  })
})
