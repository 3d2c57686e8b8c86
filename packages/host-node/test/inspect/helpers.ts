/** Runs `runInspect` in-process with captured output, and compares text against golden files. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { expect } from "vitest"
import { runInspect } from "../../src/inspect/index.js"

const here = dirname(fileURLToPath(import.meta.url))

/** The repository root: the working directory of every run, so paths print repo-relative. */
export const ROOT = join(here, "..", "..", "..", "..")
/** Fixture paths as a user types them from the repository root. */
export const FIXTURES = "packages/host-node/test/inspect/fixtures"
export const fixture = (name: string): string => `${FIXTURES}/${name}`

/** The outcome of one run. */
export interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs `plugboard inspect argv` from the repository root. */
export const inspect = async (...argv: ReadonlyArray<string>): Promise<Run> => {
  let stdout = ""
  let stderr = ""
  const code = await runInspect(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    cwd: ROOT
  })
  return { code, stdout, stderr }
}

/**
 * Compares `actual` with `golden/<name>`. `UPDATE_GOLDEN=1` rewrites the file instead; a missing
 * golden file fails the test (never silently created).
 */
export const expectGolden = (name: string, actual: string): void => {
  const file = join(here, "golden", name)
  if (process.env.UPDATE_GOLDEN === "1") {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, actual)
    return
  }
  if (!existsSync(file)) throw new Error(`No golden file ${file}: run with UPDATE_GOLDEN=1 and review it.`)
  expect(actual).toBe(readFileSync(file, "utf8"))
}
