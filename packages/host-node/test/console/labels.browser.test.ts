/**
 * What the console labels, in a real browser (issue 36, item 20): a failed tool call says it
 * failed, live and reloaded; the chat's placeholder is a request the catalog answers; a session is
 * listed under its first message; the budget's baseline is "every plugin bound" and its red
 * worst-case column says what it is. Headless Chromium against real servers: the examples'
 * catalog with the offline router, and a catalog of failing tools with a scripted model.
 */
import { Catalog } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner, mintInvocation } from "@plugboard/ucan"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { examplePlugins } from "../../../../examples/catalog/index.js"
import { flaky } from "../fixtures/flaky.js"
import { type Running, start } from "../helpers.js"
import { chromiumMissing, launch, type PageDocument } from "./browser.js"

declare const document: PageDocument

const missing = chromiumMissing()
const READY = () => document.documentElement.dataset.ready === "true"
if (missing !== undefined) console.warn(`[skip] ${missing}`)

/** A console page on `running`, with a token of a fresh user. */
const opener = (browser: () => Browser, running: () => Running) => async (): Promise<Page> => {
  const token = await mintInvocation({
    issuer: await generateSigner(),
    audience: running().app.oracleDid,
    ttlSeconds: 900
  })
  const page = await browser().newPage({ viewport: { width: 1200, height: 820 } })
  await page.goto(`${running().url}/console#token=${encodeURIComponent(token)}`)
  await page.waitForFunction(READY)
  return page
}

/** Sends `text` from the Chat tab and waits for the turn to end. */
const send = async (page: Page, text: string) => {
  await page.getByLabel("Message").fill(text)
  await page.keyboard.press("Enter")
  await page.locator('.turn[data-status="finished"]').last().waitFor()
}

/** Each tool call of the page's turns: its name and the label its summary starts with. */
const toolLabels = (page: Page) =>
  page.$$eval(".turn .tools li", (lis) =>
    lis.map((li) => [
      li.getAttribute("data-tool"),
      (li.querySelector("summary")?.textContent ?? "").split(" ")[0]
    ])
  )

describe.skipIf(missing !== undefined)("issue 36 item 20: the console labels, in Chromium", () => {
  let browser: Browser
  let examples: Running
  let failing: Running

  beforeAll(async () => {
    ;[browser, examples, failing] = await Promise.all([
      launch(),
      start({ plugins: examplePlugins }),
      start({
        plugins: [flaky],
        // Every user message: call the three tools; once they answered, say so.
        model: new ScriptedChatModel({
          respond: (turn) =>
            turn.messages.at(-1)?.getType() === "human"
              ? [{ tool: "reports_failure" }, { tool: "throws" }, { tool: "works" }]
              : "Done."
        })
      })
    ])
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await Promise.all([examples?.stop(), failing?.stop()])
  })
  const openExamples = opener(
    () => browser,
    () => examples
  )
  const openFailing = opener(
    () => browser,
    () => failing
  )

  it("issue 36 item 20: a failed tool call shows ✗ failed, live and after a reload of the history", async () => {
    const page = await openFailing()
    await send(page, "Try the flaky tools")
    const live = await toolLabels(page)
    expect(live).toEqual([
      ["reports_failure", "✗"],
      ["throws", "✗"],
      ["works", "✓"]
    ])
    expect(
      await page.locator('.turn .tools li[data-status="failed"] summary .failed').first().textContent()
    ).toBe("✗ failed ")
    // The same session opened from the Sessions tab: its history says the same.
    const session = ((await page.locator(".thread-state .muted").last().textContent()) ?? "").replace(
      "Session: ",
      ""
    )
    await page.reload()
    await page.waitForFunction(READY)
    await page.getByRole("tab", { name: "Sessions" }).click()
    await page.locator(`tr[data-session="${session}"]`).getByRole("button", { name: "Open" }).click()
    await page.locator(".turn .tools li").first().waitFor()
    expect(await toolLabels(page)).toEqual(live)
    await page.close()
  })

  it("issue 36 item 20: the placeholder is a request the catalog answers, else Send a message", async () => {
    const page = await openExamples()
    const box = page.getByLabel("Message")
    await page.waitForFunction(() =>
      [...document.querySelectorAll("#message")].some((t) => (t.getAttribute("placeholder") ?? "") !== "")
    )
    const catalog = Catalog.unsafeMake(examplePlugins)
    const first = catalog.entries.find(
      (e) => e.visibility === "always" && (e.manifest.examples?.length ?? 0) > 0
    )
    expect(first).toBeDefined()
    expect(await box.getAttribute("placeholder")).toBe(first!.manifest.examples![0]!.user)
    expect(await box.getAttribute("placeholder")).not.toBe("What's the weather in Berlin?")
    await page.close()
    // The failing catalog's one always plugin has no example.
    const other = await openFailing()
    await other.waitForFunction(() =>
      [...document.querySelectorAll("#message")].some((t) => (t.getAttribute("placeholder") ?? "") !== "")
    )
    expect(await other.getByLabel("Message").getAttribute("placeholder")).toBe("Send a message")
    await other.close()
  })

  it("issue 36 item 20: the Sessions tab lists a session under its first message", async () => {
    const page = await openExamples()
    await send(page, "What's the weather in Berlin?")
    await send(page, "And in Paris?")
    await page.getByRole("tab", { name: "Sessions" }).click()
    const row = page.locator("tr[data-session]").first()
    await row.waitFor()
    expect(await row.locator("td").first().textContent()).toBe("What's the weather in Berlin?")
    await page.close()
  })

  it("issue 36 item 20: the budget's baseline is every plugin bound, and the red k column is explained", async () => {
    const page = await openExamples()
    await page.getByRole("tab", { name: "Budget" }).click()
    await page.locator('[data-chart="worst-case"]').waitFor()
    const labels = await page.$$eval('[data-chart="turn"] g.bar', (gs) =>
      gs.map((g) => g.getAttribute("data-label"))
    )
    expect(labels).toEqual(["nothing loaded", "every plugin bound"])
    expect(await page.locator(".budget .lede").textContent()).toMatch(
      /every plugin up front \(its tools, prompt and operating guide\)/
    )
    // The red column: a legend under the chart, and a tooltip on the column, naming k and its plugins.
    const budget = await page.evaluate(async () => {
      const token = sessionStorage.getItem("plugboard-console-token")
      const r = await fetch("/console/api/budget", {
        headers: { authorization: `Bearer ${token}`, "x-auth-type": "ucan" }
      })
      return (await r.json()) as { worstCase: { k: number; plugins: Array<string> } }
    })
    const { k, plugins } = budget.worstCase
    const hot = page.locator('[data-chart="worst-case"] g.bar.hot')
    expect(await hot.count()).toBe(1)
    expect(await hot.getAttribute("data-label")).toBe(String(k))
    const tooltip = (await hot.locator("title").textContent()) ?? ""
    expect(tooltip).toContain(`the ${k} most expensive plugins loaded at once`)
    for (const p of plugins) expect(tooltip).toContain(p)
    const legend = page.locator('[data-legend="worst-case"] li[data-tone="hot"]')
    expect(await legend.isVisible()).toBe(true)
    const legendText = (await legend.textContent()) ?? ""
    expect(legendText).toContain(`k = ${k}, the worst case this report names`)
    expect(legendText).toContain(`inspect --k ${k}`)
    expect(await page.locator('[data-legend="worst-case"] li[data-tone="base"]').textContent()).toMatch(
      /other k/
    )
    await page.close()
  })
})
