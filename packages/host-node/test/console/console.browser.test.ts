/**
 * The dev console in a real browser (docs/console.md): headless Chromium against a real
 * server on embedded defaults with the scripted model and the examples' catalog. With
 * UPDATE_SCREENSHOTS=1 the run also writes the README's screenshots to docs/screenshots/.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Catalog, LoadedPlugins, MetaTools } from "@plugboard/core"
import { generateSigner, mintInvocation } from "@plugboard/ucan"
import { Either } from "effect"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { examplePlugins } from "../../../../examples/catalog/index.js"
import type { InspectReport } from "../../src/inspect/index.js"
import { runInspect } from "../../src/inspect/index.js"
import { call, type Running, start } from "../helpers.js"
import { chromiumMissing, launch, type PageDocument } from "./browser.js"

/** The page, as the predicates below read it (`PageDocument`). */
declare const document: PageDocument

const root = join(dirname(fileURLToPath(import.meta.url)), "../../../..")
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === "1" ? join(root, "docs/screenshots") : undefined
const missing = chromiumMissing()
/** The page sets it once its first render is done (console-ui/main.tsx). */
// Predicates are functions, not strings: the page's Content-Security-Policy forbids eval, which a
// string predicate needs whenever it is not true at the first check.
const READY = () => document.documentElement.dataset.ready === "true"
if (missing !== undefined) console.warn(`[skip] ${missing}`)

const shoot = async (page: Page, name: string) => {
  if (SCREENSHOTS === undefined) return
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false })
}

/** `plugboard inspect --json --eval` on the default module (the examples' catalog), as data. */
const inspectJson = async (): Promise<InspectReport> => {
  let out = ""
  const code = await runInspect(["--json", "--eval"], {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: () => true },
    cwd: root
  })
  expect(code).toBe(0)
  return JSON.parse(out) as InspectReport
}

/** Every bar of a chart: label → value. */
const bars = (page: Page, chart: string) =>
  page.$$eval(`[data-chart="${chart}"] g.bar`, (gs) =>
    gs.map((g) => [g.getAttribute("data-label"), Number(g.getAttribute("data-value"))] as const)
  )

describe.skipIf(missing !== undefined)("dev console in Chromium", () => {
  let running: Running
  let browser: Browser
  let token: string
  let report: InspectReport

  beforeAll(async () => {
    ;[running, browser] = await Promise.all([start({ plugins: examplePlugins }), launch()])
    token = await mintInvocation({
      issuer: await generateSigner(),
      audience: running.app.oracleDid,
      ttlSeconds: 900
    })
    report = await inspectJson()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await running?.stop()
  })

  const open = async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 820 } })
    await page.goto(`${running.url}/console#token=${encodeURIComponent(token)}`)
    await page.waitForFunction(READY)
    return page
  }

  it("streams an answer, shows the plugin it loaded and what each model call was offered", async () => {
    const page = await open()
    // The token left the address bar (it lives in this tab's sessionStorage).
    expect(new URL(page.url()).hash).toBe("")
    await page.getByLabel("Message").fill("What's the weather in Berlin?")
    await page.keyboard.press("Enter")
    await page.locator('[data-testid="loaded-plugins"] [data-plugin="weather"]').waitFor()
    await page.locator('.turn[data-status="finished"]').waitFor()
    const answer = (await page.locator('[data-testid="answer"]').textContent()) ?? ""
    expect(answer).toMatch(/Berlin/)
    // The answer streamed is the answer stored.
    const sessionId = ((await page.locator(".thread-state .muted").last().textContent()) ?? "").replace(
      "Session: ",
      ""
    )
    const headers = { authorization: `Bearer ${token}`, "x-auth-type": "ucan" }
    const history = await call(`${running.url}/messages/${sessionId}`, { headers })
    const stored = history.body.messages.filter((m: { type: string }) => m.type === "ai").at(-1)
    expect(answer.trim()).toBe(stored.content.trim())
    // Tool calls as they ran: the load, then the weather tool.
    const tools = await page.$$eval(".turn .tools li", (lis) => lis.map((li) => li.getAttribute("data-tool")))
    expect(tools).toContain("load_capability")
    // The offline router states each decision it makes: the reasoning is shown before the calls.
    expect(await page.locator(".turn .reasoning").count()).toBeGreaterThan(0)
    // Each model call's offer is core's turnCost for what was loaded at that call.
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".turn .call")].every((c) => c.getAttribute("data-tokens") !== null)
    )
    const calls = await page.$$eval(".turn .call", (cs) =>
      cs.map((c) => Number(c.getAttribute("data-tokens")))
    )
    expect(calls[0]).toBe(report.nothingLoaded.total)
    const weather = report.perPlugin.find((p) => p.name === "weather")!
    expect(calls.at(-1)).toBe(report.nothingLoaded.total + weather.cost - weather.guide)
    await shoot(page, "console-chat")
    await page.close()
  })

  it("shows a run_code program's calls under it (CODE_MODE=on)", async () => {
    const coded = await start({ plugins: examplePlugins, env: { CODE_MODE: "on" } })
    const page = await browser.newPage({ viewport: { width: 1200, height: 820 } })
    try {
      const theirs = await mintInvocation({
        issuer: await generateSigner(),
        audience: coded.app.oracleDid,
        ttlSeconds: 900
      })
      await page.goto(`${coded.url}/console#token=${encodeURIComponent(theirs)}`)
      await page.waitForFunction(READY)
      await page.getByLabel("Message").fill("What's the weather in Berlin, Paris and Rome: which is warmest?")
      await page.keyboard.press("Enter")
      await page.locator('.turn[data-status="finished"]').waitFor()
      const rows = await page.$$eval(".turn .tools li", (lis) =>
        lis.map((li) => ({
          tool: li.getAttribute("data-tool"),
          event: li.getAttribute("data-event"),
          parent: li.getAttribute("data-parent"),
          nested: li.classList.contains("nested")
        }))
      )
      const program = rows.find((r) => r.tool === "run_code")
      expect(program?.nested).toBe(false)
      const nested = rows.filter((r) => r.nested)
      expect(nested.map((r) => r.tool)).toEqual([
        "get_current_weather",
        "get_current_weather",
        "get_current_weather"
      ])
      expect(nested.every((r) => r.parent === program?.event)).toBe(true)
      await shoot(page, "console-code-mode")
    } finally {
      await page.close()
      await coded.stop()
    }
  })

  it("rejoins a run whose stream dropped, from the last frame it saw", async () => {
    const page = await open()
    let cut = 0
    // The first stream of the turn is cut after its first frames, as a dropped connection would.
    await page.route("**/messages/*", async (route) => {
      if (route.request().method() !== "POST" || cut > 0) return route.continue()
      cut++
      const response = await route.fetch()
      const body = await response.text()
      const frames = body.split("\n\n")
      await route.fulfill({ response, body: `${frames.slice(0, 3).join("\n\n")}\n\n` })
    })
    const rejoins: Array<string> = []
    page.on("request", (r) => {
      if (r.url().includes("/runs/")) rejoins.push(new URL(r.url()).search)
    })
    await page.getByLabel("Message").fill("What's the weather in Paris?")
    await page.keyboard.press("Enter")
    await page.locator('.turn[data-status="finished"]').waitFor()
    expect(cut).toBe(1)
    expect(rejoins.length).toBeGreaterThan(0)
    expect(rejoins[0]).toMatch(/^\?after=\d+$/)
    expect(Number(rejoins[0]!.slice(7))).toBeGreaterThan(0)
    expect(await page.locator('[data-testid="answer"]').textContent()).toMatch(/Paris/)
    await page.close()
  })

  it("lists the catalog by tier and ranks a search as list_capabilities does", async () => {
    const page = await open()
    await page.getByRole("tab", { name: "Catalog" }).click()
    await page.locator('[data-tier="on-demand"] details.plugin').first().waitFor()
    const always = await page.$$eval('[data-tier="always"] details.plugin', (ds) =>
      ds.map((d) => d.getAttribute("data-plugin"))
    )
    expect(always.sort()).toEqual(report.tier1.plugins)
    const query = "convert 20 euros to dollars"
    await page.getByLabel("Rank plugins for a query, as list_capabilities does").fill(query)
    await page.getByRole("button", { name: "Search" }).click()
    await page.locator('[data-testid="ranking"] li').first().waitFor()
    const shown = await page.$$eval('[data-testid="ranking"] li', (lis) =>
      lis.map((li) => li.getAttribute("data-plugin"))
    )
    const expected = MetaTools.listCapabilities(Catalog.unsafeMake(examplePlugins), LoadedPlugins.empty, {
      query
    })
    expect(Either.isRight(expected)).toBe(true)
    expect(shown).toEqual(Either.getOrThrow(expected).plugins.map((p) => p.name))
    // A plugin's details: its tools and their schemas, its cost when loaded.
    const first = page.locator(`details.plugin[data-plugin="${shown[0]}"]`)
    await first.locator("summary").first().click()
    const cost = Number(await first.locator(".cost").getAttribute("data-cost"))
    expect(cost).toBe(report.perPlugin.find((p) => p.name === shown[0])!.cost)
    await page.evaluate("window.scrollTo(0, 0)")
    await shoot(page, "console-catalog")
    await page.close()
  })

  it("draws the budget charts with inspect --json's figures", async () => {
    const page = await open()
    await page.getByRole("tab", { name: "Budget" }).click()
    await page.locator('[data-chart="worst-case"]').waitFor()
    expect(await bars(page, "turn")).toEqual([
      ["nothing loaded", report.nothingLoaded.total],
      ["every plugin bound", report.allBound.total]
    ])
    expect(await bars(page, "per-plugin")).toEqual(report.perPlugin.slice(0, 20).map((p) => [p.name, p.cost]))
    const worst = await bars(page, "worst-case")
    expect(worst.find(([k]) => k === String(report.worstCase.k))?.[1]).toBe(report.worstCase.total)
    const pairs = await page.$$eval('[data-chart="routing"] tr[data-pair]', (trs) =>
      trs.map((tr) => tr.getAttribute("data-pair"))
    )
    expect(pairs).toEqual(report.eval!.examples.stealing.map((s) => `${s.a}/${s.b}`))
    await page.locator('[data-chart="worst-case"]').scrollIntoViewIfNeeded()
    await shoot(page, "console-budget")
    await page.close()
  })

  it("inspect --html writes one page that draws the same charts with no network", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-html-"))
    try {
      const file = join(dir, "report.html")
      const code = await runInspect(["--html", file], {
        stdout: { write: () => true },
        stderr: { write: () => true },
        cwd: root
      })
      expect(code).toBe(0)
      const html = readFileSync(file, "utf8")
      expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|https?:\/\/(?!www\.w3\.org)/)
      const context = await browser.newContext({ offline: true, viewport: { width: 1200, height: 900 } })
      const page = await context.newPage()
      const requests: Array<string> = []
      page.on("request", (r) => requests.push(r.url()))
      await page.goto(`file://${file}`)
      await page.waitForFunction(READY)
      expect(requests).toEqual([`file://${file}`])
      expect(await bars(page, "turn")).toEqual([
        ["nothing loaded", report.nothingLoaded.total],
        ["every plugin bound", report.allBound.total]
      ])
      expect(await bars(page, "per-plugin")).toEqual(
        report.perPlugin.slice(0, 20).map((p) => [p.name, p.cost])
      )
      await shoot(page, "inspect-html")
      await context.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("lists, opens and deletes sessions", async () => {
    const page = await open()
    await page.getByRole("tab", { name: "Sessions" }).click()
    const rows = page.locator("tr[data-session]")
    await rows.first().waitFor()
    const before = await rows.count()
    expect(before).toBeGreaterThan(0)
    const id = await rows.first().getAttribute("data-session")
    await rows.first().getByRole("button", { name: "Open" }).click()
    await page.locator(".turn").first().waitFor()
    expect(await page.getByRole("tab", { name: "Chat" }).getAttribute("aria-selected")).toBe("true")
    await page.getByRole("tab", { name: "Sessions" }).click()
    page.once("dialog", (d) => void d.accept())
    await page
      .locator(`tr[data-session="${id}"]`)
      .getByRole("button", { name: /^Delete/ })
      .click()
    await page.waitForFunction((n) => document.querySelectorAll("tr[data-session]").length === n, before - 1)
    // The deleted session was the one open: Chat starts a new one instead of writing to it.
    expect(await page.locator(".thread-state .muted").last().textContent()).toBe("Session: new")
    await page.close()
  })

  it("asks for a token when it has none, and says when the server refuses one", async () => {
    const page = await browser.newPage()
    await page.goto(`${running.url}/console`)
    await page.waitForFunction(READY)
    // A token for another oracle: the server refuses it (401), the page says what to do.
    const foreign = await mintInvocation({
      issuer: await generateSigner(),
      audience: (await generateSigner()).did(),
      ttlSeconds: 60
    })
    await page.getByLabel("UCAN invocation").fill(foreign)
    await page.getByRole("button", { name: "Use this token" }).click()
    await page.getByRole("tab", { name: "Budget" }).click()
    const alert = page.locator('#panel-Budget [role="alert"]')
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/run `plugboard console` again/)
    await page.close()
  })

  it("moves between tabs with the arrow keys", async () => {
    const page = await open()
    await page.getByRole("tab", { name: "Chat" }).focus()
    await page.keyboard.press("ArrowRight")
    expect(await page.getByRole("tab", { name: "Catalog" }).getAttribute("aria-selected")).toBe("true")
    await page.keyboard.press("End")
    expect(await page.getByRole("tab", { name: "Sessions" }).getAttribute("aria-selected")).toBe("true")
    await page.close()
  })
})
