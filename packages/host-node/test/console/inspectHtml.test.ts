/**
 * `plugboard inspect --html FILE` (docs/console.md): one self-contained page carrying the
 * report as data; the browser test draws it. Here: what is written, and the failures.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { ExitCode, parseArgs, runInspect } from "../../src/inspect/index.js"

const root = join(dirname(fileURLToPath(import.meta.url)), "../../../..")
const dir = mkdtempSync(join(tmpdir(), "plugboard-inspect-html-"))

const run = async (argv: ReadonlyArray<string>) => {
  let out = ""
  let err = ""
  const code = await runInspect(argv, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    cwd: root
  })
  return { code, out, err }
}

describe("inspect --html", () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("writes the report --json prints, embedded in one page with its code inline", async () => {
    const file = join(dir, "report.html")
    const html = await run(["--html", file, "--json"])
    expect(html.code).toBe(0)
    expect(html.err).toMatch(/wrote .*report\.html \(\d+ KB, self-contained\)/)
    const page = readFileSync(file, "utf8")
    const embedded = /<script type="application\/json" id="plugboard-report">(.*?)<\/script>/s.exec(page)?.[1]
    expect(JSON.parse(embedded!)).toEqual(JSON.parse(html.out))
    // --html implies --eval: the routing section has its figures.
    expect(JSON.parse(html.out).eval.examples.queries).toBeGreaterThan(0)
    expect(page).not.toMatch(/<script[^>]+src=|<link[^>]+href=/)
  })

  it("refuses a file it cannot write (exit 73) and a missing file name (64)", async () => {
    const bad = await run(["--html", join(dir, "no-such-folder", "r.html")])
    expect(bad.code).toBe(ExitCode.CantCreate)
    expect(bad.err).toContain("Cannot write --html file")
    expect(() => parseArgs(["--html"])).toThrow(/--html needs a value/)
    expect(() => parseArgs(["--html="])).toThrow(/--html needs a file name/)
  })
})
