/**
 * `plugboard chat` answers the approvals its runs wait for (docs/waiting.md): the chat asks on the
 * terminal, sends the answer (`POST /runs/:runId/resume`) and prints the resumed run; without a
 * terminal it says how to answer. Through a real server on SQLite, with the client the CLI uses.
 */
import { dirname, join } from "node:path"
import { PassThrough } from "node:stream"
import { fileURLToPath } from "node:url"
import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner } from "@plugboard/ucan"
import { afterEach, describe, expect, it } from "vitest"
import { askLine } from "../src/cli/Ask.js"
import { type Ask, chatTurn, connectChat, decisionOf } from "../src/cli/ChatClient.js"
import { paymentsPlugin } from "./fixtures/payments.js"
import { headersFor, type Running, start } from "./helpers.js"

const ran: Array<number> = []
const payments = paymentsPlugin(ran)

let server: Running | undefined
afterEach(async () => {
  await server?.stop()
  server = undefined
  ran.length = 0
})

/** A server whose model pays 5, then answers `answer`; a chat client of a new user on it. */
const setUp = async (answer: string) => {
  server = await start({
    plugins: [payments],
    model: ScriptedChatModel.script([{ tool: "pay", args: { amount: 5 } }, answer])
  })
  const signer = await generateSigner()
  const client = await connectChat({ url: server.url, signer })
  return { client, signer, sessionId: await client.createSession() }
}

/** An `ask` that replies from a list and records the questions. */
const replies = (...answers: Array<string | undefined>) => {
  const asked: Array<string> = []
  const ask: Ask = async (question) => {
    asked.push(question)
    return answers.shift()
  }
  return { ask, asked }
}

const chat = async (
  client: Awaited<ReturnType<typeof setUp>>["client"],
  sessionId: string,
  ask: Ask | undefined
) => {
  let out = ""
  const ok = await chatTurn(
    client,
    sessionId,
    "Pay 5",
    (t) => {
      out += t
    },
    ask
  )
  return { ok, out }
}

describe("plugboard chat and approvals", () => {
  it("asks, and an approval runs the tool once and prints the resumed run's answer", async () => {
    const { client, sessionId } = await setUp("Paid.")
    const { ask, asked } = replies("y")
    const { ok, out } = await chat(client, sessionId, ask)
    expect(ok).toBe(true)
    expect(asked).toEqual([
      expect.stringContaining('pay (payments) wants to run with {"amount":5}. Approve?')
    ])
    expect(ran).toEqual([5])
    expect(out).toContain("← pay paid 5")
    expect(out).toContain("Paid.")
    expect(out).not.toContain("/resume")
  })

  it("asks again after an answer that is neither yes nor no; a denial's note reaches the model, the tool never runs", async () => {
    const { client, sessionId } = await setUp("Not paid, as you asked.")
    const { ask, asked } = replies("maybe", "n too much")
    const { ok, out } = await chat(client, sessionId, ask)
    expect(ok).toBe(true)
    expect(asked).toHaveLength(2)
    expect(out).toContain("Answer y or n.")
    expect(out).toContain("Not paid, as you asked.")
    expect(ran).toEqual([])
  })

  it("without anyone to ask (no terminal, or stdin closed), prints how to answer and leaves the wait open", async () => {
    for (const ask of [undefined, replies(undefined).ask]) {
      const { client, sessionId } = await setUp("unused")
      const { ok, out } = await chat(client, sessionId, ask)
      expect(ok).toBe(true)
      expect(out).toMatch(/⏸ pay \(payments\) waits for your approval: POST \/runs\/run_[^/]+\/resume/)
      expect(ran).toEqual([])
      await server?.stop()
      server = undefined
    }
  })

  it("an approval another tab gave first: the chat says so and starts nothing", async () => {
    const { client, signer, sessionId } = await setUp("Paid.")
    // Another tab of the same user approves between the chat's question and its answer.
    const racing: typeof client = {
      ...client,
      resume: async function* (runId, decision) {
        const other = await fetch(`${server!.url}/runs/${encodeURIComponent(runId)}/resume`, {
          method: "POST",
          headers: await headersFor(signer, client.oracleDid),
          body: JSON.stringify({ decision: "approve" })
        })
        await other.text() // that tab reads the resumed run to its end
        return yield* client.resume(runId, decision)
      }
    }
    const { out } = await chat(racing, sessionId, replies("n").ask)
    expect(out).toContain(`This approval was answered already (by ${signer.did()}).`)
    expect(ran).toEqual([5])
  })
})

describe("the chat's answers", () => {
  it("reads yes, no and a note; anything else is no answer", () => {
    expect(decisionOf("y")).toEqual({ approve: true })
    expect(decisionOf(" YES ")).toEqual({ approve: true })
    expect(decisionOf("approve")).toEqual({ approve: true })
    expect(decisionOf("n")).toEqual({ approve: false })
    expect(decisionOf("no  it is too much")).toEqual({ approve: false, note: "it is too much" })
    expect(decisionOf("deny")).toEqual({ approve: false })
    for (const reply of [undefined, "", "  ", "maybe", "yesterday"]) expect(decisionOf(reply)).toBeUndefined()
  })

  it("askLine resolves with the line typed, or undefined once input ends", async () => {
    const input = new PassThrough()
    const output = new PassThrough()
    const line = askLine(input, output, "Approve? ")
    input.write("y\n")
    expect(await line).toBe("y")
    expect(output.read()?.toString()).toBe("Approve? ")
    const ended = askLine(input, output, "Again? ")
    input.end()
    expect(await ended).toBeUndefined()
    expect(await askLine(input, output, "Once more? ")).toBeUndefined()
  })
})

describe("plugboard chat and a question a call asks (an MCP elicitation)", () => {
  const boot = async (env: Record<string, string> = {}) => {
    server = await start({
      plugins: [],
      mcpServers: {
        mcpServers: {
          asking: {
            command: process.execPath,
            args: [join(dirname(fileURLToPath(import.meta.url)), "fixtures", "mcp", "asking-server.mjs")],
            timeoutMs: 30_000
          }
        }
      },
      model: ScriptedChatModel.script([
        { tool: "load_capability", args: { names: ["asking"] } },
        { tool: "ask_name", args: {} },
        "Done."
      ]),
      env
    })
    const client = await connectChat({ url: server.url, signer: await generateSigner() })
    return { client, sessionId: await client.createSession() }
  }

  it("asks the form field by field; a value the server refuses is said and asked again; the server gets the values", async () => {
    const { client, sessionId } = await boot()
    // y, name, age -1 (refused by the schema's minimum), newsletter, colour; then again with 36.
    const { ask, asked } = replies("y", "Ada", "-1", "", "", "y", "Ada", "36", "y", "green")
    const { ok, out } = await chat(client, sessionId, ask)
    expect(asked[0]).toBe("Answer it? [y, or n to decline] ")
    expect(asked.slice(1, 5)).toEqual([
      "  Name (string): ",
      "  Age (integer): ",
      "  Newsletter (boolean) [enter to skip]: ",
      "  Colour (red|green|blue) [enter to skip]: "
    ])
    expect(out).toContain("⏸ ask_name (asking) asks: Who are you?")
    expect(out).toContain("Not accepted: the values do not fit the form: values/age must be >= 0")
    expect(out).toContain(
      JSON.stringify({
        action: "accept",
        content: { name: "Ada", age: 36, newsletter: true, colour: "green" }
      })
    )
    expect(out).toContain("Done.")
    expect(ok).toBe(true)
  }, 60_000)

  it("n declines; without a terminal it prints how to answer and the run goes on (declined at the timeout)", async () => {
    const first = await boot()
    const declined = await chat(first.client, first.sessionId, replies("n").ask)
    expect(declined.out).toContain(JSON.stringify({ action: "decline" }))
    await server?.stop()
    const second = await boot({ WAIT_TIMEOUT_MS: "300" })
    const { ok, out } = await chat(second.client, second.sessionId, undefined)
    expect(out).toMatch(
      /⏸ ask_name \(asking\) asks: Who are you\? — answer with POST \/runs\/run_[^/]+\/resume/
    )
    expect(out).toContain(JSON.stringify({ action: "decline" }))
    expect(out).toContain("Done.")
    expect(ok).toBe(true)
  }, 60_000)
})
