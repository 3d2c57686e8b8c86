/**
 * The dev console's page weight and time to interactive (docs/console.md), in Debian's
 * headless Chromium through playwright-core, against a real server on embedded defaults with the
 * examples' catalog.
 *
 * - weight: the bytes of `GET /console` (one document, script and styles inline) as the server
 *   sends it, and gzipped (what a compressing proxy would send), and of `inspect --html`'s page;
 * - time to interactive: a fresh browser context per sample (nothing cached), navigation start to
 *   the page's first render (`performance.mark("plugboard-ready")`, set once the app's first
 *   render is committed, its tab list and message box usable), with domInteractive beside it;
 *   the anchor, measured in the same run alternately, is `GET /health` (a tiny JSON document from
 *   the same server) to its domInteractive: what any page of this server costs at the least;
 * - the Budget tab: click to the first chart drawn (its API answer computed once per server:
 *   the first sample pays the report, later ones are cached).
 * The machine is shared: the load average is printed with the figures.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { generateSigner, mintInvocation } from "@plugboard/ucan"
import { examplePlugins } from "../examples/catalog/index.js"
import { runInspect } from "../packages/host-node/src/inspect/index.js"
import { chromiumMissing, launch, type PageDocument } from "../packages/host-node/test/console/browser.js"
import { start } from "../packages/host-node/test/helpers.js"

/** The page, as the predicates below read it (`PageDocument`). */
declare const document: PageDocument

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const SAMPLES = Number(process.env.BENCH_CONSOLE_SAMPLES ?? 20)

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}
const p90 = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.9) - 1]!
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`
const ms = (n: number) => `${n.toFixed(1)} ms`

export default async function consoleBench(): Promise<void> {
  const missing = chromiumMissing()
  if (missing !== undefined) {
    console.log(`skipped: ${missing}`)
    return
  }
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`
  )
  const running = await start({ plugins: examplePlugins })
  const browser = await launch()
  try {
    const token = await mintInvocation({
      issuer: await generateSigner(),
      audience: running.app.oracleDid,
      ttlSeconds: 900
    })
    // Weight.
    const page = Buffer.from(await (await fetch(`${running.url}/console`)).arrayBuffer())
    const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-console-"))
    const file = join(dir, "report.html")
    await runInspect(["--html", file], {
      stdout: { write: () => true },
      stderr: { write: () => true },
      cwd: root
    })
    const report = readFileSync(file)
    rmSync(dir, { recursive: true, force: true })
    const script = /<script>([\s\S]*)<\/script>/.exec(page.toString("utf8"))?.[1] ?? ""
    console.log("\npage weight (bytes as sent / gzipped, level 6)")
    console.table({
      "GET /console": { sent: kb(page.length), gzipped: kb(gzipSync(page).length) },
      "  of which the script": {
        sent: kb(Buffer.byteLength(script)),
        gzipped: kb(gzipSync(Buffer.from(script)).length)
      },
      "inspect --html (examples' catalog)": { sent: kb(report.length), gzipped: kb(gzipSync(report).length) }
    })

    // Time to interactive, alternating with the anchor.
    const ready: Array<number> = []
    const interactive: Array<number> = []
    const anchor: Array<number> = []
    const budgetFirstChart: Array<number> = []
    for (let i = 0; i < SAMPLES + 2; i++) {
      const context = await browser.newContext()
      const tab = await context.newPage()
      await tab.goto(`${running.url}/health`)
      const a = (await tab.evaluate("performance.getEntriesByType('navigation')[0].domInteractive")) as number
      await tab.goto(`${running.url}/console#token=${encodeURIComponent(token)}`)
      // A function, not a string: the page's CSP forbids the eval a string predicate may need.
      await tab.waitForFunction(() => document.documentElement.dataset.ready === "true")
      const [r, d] = (await tab.evaluate(
        "[performance.getEntriesByName('plugboard-ready')[0].startTime, performance.getEntriesByType('navigation')[0].domInteractive]"
      )) as [number, number]
      const t0 = performance.now()
      await tab.getByRole("tab", { name: "Budget" }).click()
      await tab.locator('[data-chart="turn"]').waitFor()
      const b = performance.now() - t0
      await context.close()
      if (i < 2) continue // warm-up: the server's first bundle and report
      anchor.push(a)
      ready.push(r)
      interactive.push(d)
      budgetFirstChart.push(b)
    }
    console.log(`\ntime to interactive, ${SAMPLES} fresh contexts (navigation start → …)`)
    console.table({
      "console: first render (plugboard-ready)": { median: ms(median(ready)), p90: ms(p90(ready)) },
      "console: domInteractive": { median: ms(median(interactive)), p90: ms(p90(interactive)) },
      "anchor: GET /health domInteractive": { median: ms(median(anchor)), p90: ms(p90(anchor)) },
      "Budget tab: click → first chart (report cached)": {
        median: ms(median(budgetFirstChart)),
        p90: ms(p90(budgetFirstChart))
      }
    })
    console.log(
      `load average at end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`
    )
  } finally {
    await browser.close()
    await running.stop()
  }
}
