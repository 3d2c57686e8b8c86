/**
 * `pnpm plugboard inspect` as a user types it: a real process through the root script (the
 * launcher that preloads Effect and registers tsx), not `runInspect` in-process. Same output as
 * the in-process golden files, and the exit codes reach the shell.
 */
import { spawnSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import { expectGolden, fixture, ROOT } from "./helpers.js"

const typed = (...argv: ReadonlyArray<string>) => {
  const run = spawnSync("pnpm", ["-s", "plugboard", "inspect", ...argv], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" }
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

describe("pnpm plugboard inspect, as typed", () => {
  it("prints the weather plugin's report exactly as the golden file", () => {
    const run = typed("examples/plugins/weather.ts")
    expect(run.stderr).toBe("")
    expect(run.code).toBe(0)
    expectGolden("weather.txt", run.stdout)
  })

  it("exits 2 with the [boot-error] lines on a catalog with hard errors", () => {
    const run = typed(fixture("hard-errors.ts"))
    expect(run.code).toBe(2)
    expectGolden("hard-errors.stderr.txt", run.stderr)
  })

  it("exits 1 over budget", () => {
    expect(typed(fixture("over-budget.ts"), "--budget", "100").code).toBe(1)
  })
})
