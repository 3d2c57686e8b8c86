/**
 * The console answers an MCP server's elicitation (issue 40, docs/waiting.md, docs/console.md), in
 * a real browser: a real SDK server's tool asks, inside its call, for a form (name, age,
 * newsletter, colour); the turn shows the question with a form built from the schema; values that
 * do not fit are refused with the server's reason shown and the form kept; Send gives the server
 * the values (the tool's result shows them) and the run, still streaming, finishes in the same
 * turn; Decline gives the server a decline. Headless Chromium against a real server on SQLite.
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner, mintInvocation } from "@plugboard/ucan"
import type { Browser, Page } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type Running, start } from "../helpers.js"
import { chromiumMissing, launch, type PageDocument } from "./browser.js"

declare const document: PageDocument

const here = dirname(fileURLToPath(import.meta.url))
const missing = chromiumMissing()
const READY = () => document.documentElement.dataset.ready === "true"
if (missing !== undefined) console.warn(`[skip] ${missing}`)

describe.skipIf(missing !== undefined)(
  "issue 40: an MCP elicitation answered in the console, in Chromium",
  () => {
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
    })

    /** A server whose model calls `ask_name` and then says what the tool answered; a console page on it. */
    const open = async (env: Record<string, string> = {}): Promise<Page> => {
      server = await start({
        plugins: [],
        mcpServers: {
          mcpServers: {
            asking: {
              command: process.execPath,
              args: [join(here, "..", "fixtures", "mcp", "asking-server.mjs")],
              timeoutMs: 60_000
            }
          }
        },
        model: ScriptedChatModel.script([
          { tool: "load_capability", args: { names: ["asking"] } },
          { tool: "ask_name", args: {} },
          "Thanks."
        ]),
        env
      })
      const signer = await generateSigner()
      const token = await mintInvocation({ issuer: signer, audience: server.app.oracleDid, ttlSeconds: 900 })
      const page = await browser.newPage({ viewport: { width: 1200, height: 820 } })
      await page.goto(`${server.url}/console#token=${encodeURIComponent(token)}`)
      await page.waitForFunction(READY)
      await page.getByLabel("Message").fill("Who am I?")
      await page.keyboard.press("Enter")
      await page.locator('fieldset.waiting[data-state="open"]').waitFor()
      return page
    }

    it("shows the question as a form; a value that does not fit is refused with why; Send reaches the server and the turn finishes", async () => {
      const page = await open()
      const box = page.getByRole("group", { name: "Question" })
      expect(await box.textContent()).toContain("ask_name (asking) asks: Who are you?")
      await box.getByLabel("Name *").fill("Ada")
      // -1 is below the schema's minimum (0), which the form does not check: the server refuses it
      // with why, and the form keeps what was typed.
      await box.getByLabel("Age *").fill("-1")
      await box.getByRole("button", { name: "Send" }).click()
      await box.getByRole("alert").waitFor()
      expect(await box.getByRole("alert").textContent()).toContain("values/age must be >= 0")
      expect(await box.getByLabel("Name *").inputValue()).toBe("Ada")

      await box.getByLabel("Age *").fill("36")
      await box.getByLabel("Newsletter").check()
      await box.getByLabel("Colour").selectOption("green")
      await box.getByRole("button", { name: "Send" }).click()
      await page.locator('.turn[data-status="finished"]').waitFor()
      expect(await page.locator(".turn").count()).toBe(1)
      expect(await page.locator("fieldset.waiting").count()).toBe(0)
      expect(await page.locator('.turn .tools li[data-tool="ask_name"] pre').textContent()).toBe(
        `elicited: ${JSON.stringify({ action: "accept", content: { name: "Ada", age: 36, newsletter: true, colour: "green" } })}`
      )
      expect(await page.getByTestId("answer").textContent()).toContain("Thanks.")
      await page.close()
    })

    it("no answer by the deadline: the form goes, the server was declined, and the turn finishes", async () => {
      const page = await open({ WAIT_TIMEOUT_MS: "1500" })
      await page.locator('.turn[data-status="finished"]').waitFor()
      expect(await page.locator("fieldset.waiting").count()).toBe(0)
      expect(await page.locator('.turn .tools li[data-tool="ask_name"] pre').textContent()).toBe(
        `elicited: ${JSON.stringify({ action: "decline" })}`
      )
      await page.close()
    })

    it("Decline: the server is told decline and the turn finishes", async () => {
      const page = await open()
      await page.getByRole("group", { name: "Question" }).getByRole("button", { name: "Decline" }).click()
      await page.locator('.turn[data-status="finished"]').waitFor()
      expect(await page.locator('.turn .tools li[data-tool="ask_name"] pre').textContent()).toBe(
        `elicited: ${JSON.stringify({ action: "decline" })}`
      )
      await page.close()
    })
  }
)
