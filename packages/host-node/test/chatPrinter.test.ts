/** How `plugboard chat` prints a stream's events. */
import { describe, expect, it } from "vitest"
import { type ChatClient, chatTurn } from "../src/cli/ChatClient.js"
import { eventPrinter, printEvent } from "../src/cli/Sse.js"

const at = "2026-11-22T00:00:00.000Z"

describe("the chat client's printer", () => {
  it("prints a provider's long, multi-line reasoning on one clipped line", () => {
    const content = `First thought.\n\n  Second thought, indented.\n${"word ".repeat(200)}`
    const line = printEvent({ _tag: "reasoning", content, timestamp: at })
    expect(line.split("\n")).toHaveLength(2)
    expect(line.startsWith("… First thought. Second thought, indented. word word")).toBe(true)
    expect(line.trimEnd().endsWith("…")).toBe(true)
    expect(line.length).toBeLessThan(320)
    expect(printEvent({ _tag: "reasoning", content: "Short.", timestamp: at })).toBe("… Short.\n")
  })

  it("runs answer chunks on as one paragraph and puts every other event on its own line", () => {
    const print = eventPrinter()
    const out = [
      print({ _tag: "reasoning", content: "Loading weather.", timestamp: at }),
      print({ _tag: "message", content: "It is ", timestamp: at }),
      print({ _tag: "message", content: "sunny.", timestamp: at }),
      print({ _tag: "done" })
    ].join("")
    expect(out).toContain("… Loading weather.\n")
    expect(out).toContain("It is sunny.")
    expect(out.trimEnd().endsWith("← done")).toBe(true)
  })

  it("a connect wait prints its link and where the run goes on; the chat never asks to approve it", async () => {
    const waiting = {
      _tag: "waiting" as const,
      waitId: "wait_1",
      runId: "run_1",
      kind: "connect" as const,
      plugin: "notes",
      tool: "load_capability",
      args: { names: ["notes"] },
      reason: "notes signs each user in with OAuth.",
      url: "https://oracle.example/oauth/start?ticket=t",
      deadline: at
    }
    const line = printEvent(waiting)
    expect(line).toBe(
      "⏸ notes needs you to connect your account: open https://oracle.example/oauth/start?ticket=t — the conversation goes on once you do (GET /runs/run_1/waits names the run that continues it)\n"
    )
    const asked: Array<string> = []
    const out: Array<string> = []
    const client = {
      stream: async function* () {
        yield waiting
        yield { _tag: "done" as const, status: "interrupted" as const, reason: "waiting" }
      },
      resume: () => {
        throw new Error("a connect wait is not resumed by the chat")
      }
    } as unknown as ChatClient
    await chatTurn(
      client,
      "s1",
      "read my notes",
      (t) => out.push(t),
      async (q) => {
        asked.push(q)
        return "y"
      }
    )
    expect(asked).toEqual([])
    expect(out.join("")).toContain(line)
  })
})
