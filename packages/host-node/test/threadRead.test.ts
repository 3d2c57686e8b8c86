/**
 * One failure policy for the thread read: a saver whose `getTuple` fails. The session check and
 * the turn's own load no longer disagree (a 503 at one, an empty state at the other): the turn
 * goes on on an empty state and answers, and is saved only if the thread can then be seen to be
 * empty (else the client is told it was not saved, and the run ends failed with the answer it
 * saw); the history routes, which exist to read the thread, answer 503.
 */

import type { RunnableConfig } from "@langchain/core/runnables"
import { MemorySaver } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { call, collect, recordingLogger, start, stream, user } from "./helpers.js"

/** A MemorySaver whose reads fail while `failing` is set. */
class FlakySaver extends MemorySaver {
  failing = false
  reads = 0
  override async getTuple(config: RunnableConfig) {
    this.reads++
    if (this.failing) throw new Error("disk I/O error")
    return super.getTuple(config)
  }
}

describe("a thread that cannot be read", () => {
  it("the turn goes on on an empty state and answers; history answers 503; nothing is lost", async () => {
    const saver = new FlakySaver()
    const readsAtModelCall: Array<number> = []
    const { logger, records } = recordingLogger()
    const server = await start({
      logger,
      hooks: { checkpointerForUser: () => saver },
      model: new ScriptedChatModel({
        model: "counting",
        respond: () => {
          readsAtModelCall.push(saver.reads)
          return readsAtModelCall.length === 1 ? "First answer." : "Second answer."
        }
      })
    })
    try {
      const u = await user(server.app.oracleDid)
      const first = await collect((await stream(server.url, "talk", u.headers, "Hello")).events)
      expect(first.at(-1)).toEqual({ _tag: "done", status: "finished" })
      saver.failing = true
      const readsBefore = saver.reads
      const { response, events } = await stream(server.url, "talk", u.headers, "Hello again")
      expect(response.status).toBe(200)
      const second = await collect(events)
      expect(
        second
          .filter((e) => e._tag === "message")
          .map((e) => (e as { content: string }).content)
          .join("")
      ).toBe("Second answer.")
      // The answer could not be saved (the thread still cannot be read, so it cannot be known to
      // be empty): the client is told, and the run ends failed with the answer it saw.
      const error = second.find((e) => e._tag === "error") as { error: string } | undefined
      expect(error?.error).toMatch(/^not saved: the thread's state could not be read/)
      expect(second.at(-1)).toEqual({
        _tag: "done",
        status: "failed",
        partialText: "Second answer.",
        reason: "turn-failed"
      })
      // The thread was read once before the model was called: the owner check's read is the
      // turn's load (TurnSaver.prefetch), and its failure was logged as the turn's failed load.
      expect(readsAtModelCall[1]! - readsBefore).toBe(1)
      expect(records.some((r) => r.message.includes("checkpointer load failed"))).toBe(true)
      const history = await call(`${server.url}/messages/talk`, { headers: u.headers })
      expect(history.status).toBe(503)
      // Once the saver reads again, the thread is as the first turn left it: the turn that ran on
      // an empty state was not saved over it.
      saver.failing = false
      const after = await call(`${server.url}/messages/talk`, { headers: u.headers })
      expect(after.body.messages.map((m: { content: string }) => m.content)).toEqual([
        "Hello",
        "First answer."
      ])
    } finally {
      await server.stop()
    }
  })
})
