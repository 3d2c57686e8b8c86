/**
 * The MCP client's elicitation (issue 40, docs/waiting.md), against a real SDK server (the host
 * tests' `asking-server.mjs`): the client declares form elicitation; a server's
 * `elicitation/create` during a call goes to that call's `onElicit` and its answer goes back
 * (values: accept; a decline or no answer: decline). With no call that can ask, or two calls in
 * flight on one connection (the protocol does not say which one asks), the server is declined and
 * nobody is asked; the annotations' `destructiveHint` is read into the tool descriptions.
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { ToolOutput, type Wait } from "@plugboard/core"
import { afterAll, describe, expect, it } from "vitest"
import { McpPool } from "../src/Pool.js"
import { stdioServer } from "./fixtures/servers.js"

const asking = stdioServer("asking", [
  join(dirname(fileURLToPath(import.meta.url)), "../../../host-node/test/fixtures/mcp/asking-server.mjs")
])
const pool = new McpPool()
afterAll(() => pool.close())

const text = (output: ToolOutput.ToolOutput) => ToolOutput.toText(output)

describe("elicitation on a call in flight", () => {
  it("the call's onElicit gets the question and schema; its values go back to the server as accept", async () => {
    const asked: Array<Wait.InputQuestion> = []
    const output = await pool.call(
      asking,
      "ask_name",
      {},
      {
        onElicit: async (question) => {
          asked.push(question)
          return { _tag: "values", values: { name: "Ada", age: 36 } }
        }
      }
    )
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({
      message: "Who are you?",
      schema: { type: "object", required: ["name", "age"] }
    })
    expect(text(output)).toBe(
      `elicited: ${JSON.stringify({ action: "accept", content: { name: "Ada", age: 36 } })}`
    )
  })

  it("a decline and a timeout go back as decline", async () => {
    for (const answer of [{ _tag: "declined" }, { _tag: "timed-out" }] as const) {
      const output = await pool.call(asking, "ask_name", {}, { onElicit: async () => answer })
      expect(text(output)).toBe(`elicited: ${JSON.stringify({ action: "decline" })}`)
    }
  })

  it("a call that cannot ask: the server is declined", async () => {
    const output = await pool.call(asking, "ask_name", {})
    expect(text(output)).toBe(`elicited: ${JSON.stringify({ action: "decline" })}`)
  })

  it("two calls in flight on one connection: the question is put to neither; a call left alone may be asked its own", async () => {
    const asked: Array<string> = []
    const ask = (who: string) => async (): Promise<Wait.InputAnswer> => {
      asked.push(who)
      return { _tag: "values", values: { name: who, age: 1 } }
    }
    // Both requests are written before any message from the server is read (a later turn of the
    // event loop), so both calls are in flight when the first elicitation arrives: it is declined.
    // The other call's elicitation may come once the first call has ended: then it is alone, and
    // its own user is asked.
    const users = ["alice", "bob"]
    const outputs = await Promise.all(
      users.map((who) => pool.call(asking, "ask_name", {}, { onElicit: ask(who) }))
    )
    const decline = `elicited: ${JSON.stringify({ action: "decline" })}`
    expect(outputs.filter((o) => text(o) === decline).length).toBeGreaterThanOrEqual(1)
    expect(asked.length).toBeLessThanOrEqual(1)
    outputs.forEach((o, i) => {
      if (text(o) !== decline) {
        expect(asked).toEqual([users[i]])
        expect(text(o)).toBe(
          `elicited: ${JSON.stringify({ action: "accept", content: { name: users[i], age: 1 } })}`
        )
      }
    })
  })

  it("one question at a time per call: a second asked before the first is answered is declined", async () => {
    // The first question's answer is held until the connection has declined the second (it logs it).
    let release: () => void = () => {}
    const secondDeclined = new Promise<void>((resolve) => {
      release = resolve
    })
    const silent = () => {}
    const watching = new McpPool({
      logger: {
        debug: (message) => {
          if (message.includes("a second question during one call was declined")) release()
        },
        info: silent,
        warn: silent,
        error: silent
      }
    })
    const asked: Array<string> = []
    const output = await watching
      .call(
        { ...asking, name: "asking-twice" },
        "ask_twice",
        {},
        {
          onElicit: async (question) => {
            asked.push(question.message)
            await secondDeclined
            return { _tag: "values", values: { name: "Ada" } }
          }
        }
      )
      .finally(() => watching.close())
    expect(asked).toHaveLength(1)
    expect(JSON.parse(text(output).replace("elicited: ", "")).sort()).toEqual(["accept", "decline"])
  })

  it("the call's timeout pauses while its user is asked, and still ends a call that never answers", async () => {
    // The call's own budget, on a connection already open: what is timed is the call, not the
    // start of a process (which alone may take 300 ms on a loaded machine).
    await pool.describe(asking)
    const quick = { timeoutMs: 300 }
    // The user takes longer than the whole call may (the timeout elapses twice over) to answer.
    const slowUser = async (): Promise<Wait.InputAnswer> => {
      await new Promise((r) => setTimeout(r, 700))
      return { _tag: "values", values: { name: "Slow", age: 90 } }
    }
    const output = await pool.call(asking, "ask_name", {}, { ...quick, onElicit: slowUser })
    expect(text(output)).toBe(
      `elicited: ${JSON.stringify({ action: "accept", content: { name: "Slow", age: 90 } })}`
    )
    await expect(pool.call(asking, "stall", {}, { ...quick, onElicit: slowUser })).rejects.toMatchObject({
      reason: "timeout",
      message: expect.stringContaining("did not answer the call of tool 'stall' within 300 ms")
    })
  })

  it("destructiveHint is read from the tools' annotations", async () => {
    const description = await pool.describe(asking)
    expect(description.tools.find((t) => t.name === "remove")?.destructiveHint).toBe(true)
    expect(description.tools.find((t) => t.name === "peek")?.destructiveHint).toBeUndefined()
  })
})
