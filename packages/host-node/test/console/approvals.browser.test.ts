import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner, mintInvocation, type Signer } from "@plugboard/ucan"
import type { Browser, Page } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { paymentsPlugin } from "../fixtures/payments.js"
import { headersFor, type Running, start } from "../helpers.js"
import { chromiumMissing, launch, type PageDocument } from "./browser.js"

declare const document: PageDocument

const missing = chromiumMissing()
const READY = () => document.documentElement.dataset.ready === "true"
if (missing !== undefined) console.warn(`[skip] ${missing}`)

const ran: Array<number> = []
const payments = paymentsPlugin(ran)

describe.skipIf(missing !== undefined)("issue 40: approvals in the console, in Chromium", () => {
  let browser: Browser
  let server: Running | undefined
  beforeAll(async () => {
    browser = await launch()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
  })
  afterEach(async () => {
    await server?.stop()
    server = undefined
    ran.length = 0
  })

  /** A server whose model pays 5 and then answers `answer`; a console page of a new user on it. */
  const open = async (answer: string): Promise<{ page: Page; signer: Signer }> => {
    server = await start({
      plugins: [payments],
      model: ScriptedChatModel.script([{ tool: "pay", args: { amount: 5 } }, answer])
    })
    const signer = await generateSigner()
    const token = await mintInvocation({ issuer: signer, audience: server.app.oracleDid, ttlSeconds: 900 })
    const page = await browser.newPage({ viewport: { width: 1200, height: 820 } })
    await page.goto(`${server.url}/console#token=${encodeURIComponent(token)}`)
    await page.waitForFunction(READY)
    await page.getByLabel("Message").fill("Pay 5")
    await page.keyboard.press("Enter")
    await page.locator('.turn[data-status="waiting"] fieldset.waiting[data-state="open"]').waitFor()
    return { page, signer }
  }

  it("shows the call that waits; Approve runs it once and streams the answer into the same turn", async () => {
    const { page } = await open("Paid.")
    const box = page.getByRole("group", { name: "Approval" })
    expect(await box.textContent()).toContain('pay (payments) waits for your approval: {"amount":5}')
    expect(ran).toEqual([])
    await box.getByRole("button", { name: "Approve" }).click()
    await page.locator('.turn[data-status="finished"]').waitFor()
    expect(await page.locator(".turn").count()).toBe(1)
    expect(await page.getByTestId("answer").textContent()).toContain("Paid.")
    expect(await page.locator('.turn .tools li[data-tool="pay"] pre').textContent()).toBe("paid 5")
    expect(await page.locator("fieldset.waiting").count()).toBe(0)
    expect(ran).toEqual([5])
    await page.close()
  })

  it("Deny: the tool never runs, the model is told and the turn finishes", async () => {
    const { page } = await open("Not paid.")
    await page.getByRole("group", { name: "Approval" }).getByRole("button", { name: "Deny" }).click()
    await page.locator('.turn[data-status="finished"]').waitFor()
    expect(await page.getByTestId("answer").textContent()).toContain("Not paid.")
    expect(ran).toEqual([])
    await page.close()
  })

  it("an approval another tab gave first: the console says so and nothing runs again", async () => {
    const { page, signer } = await open("Paid.")
    // The other tab: the same user answers through the API, for the run the box names.
    const waiting = await page.locator("fieldset.waiting").getAttribute("data-run")
    expect(waiting).toMatch(/^run_/)
    const headers = await headersFor(signer, server!.app.oracleDid)
    const other = await fetch(`${server!.url}/runs/${encodeURIComponent(waiting!)}/resume`, {
      method: "POST",
      headers,
      body: JSON.stringify({ decision: "approve" })
    })
    await other.text()
    expect(ran).toEqual([5])
    await page.getByRole("group", { name: "Approval" }).getByRole("button", { name: "Approve" }).click()
    await page.locator('fieldset.waiting[data-state="answered"]').waitFor()
    expect(await page.locator("fieldset.waiting .note").textContent()).toBe(
      `answered already by ${signer.did()}`
    )
    expect(ran).toEqual([5])
    await page.close()
  })
})
