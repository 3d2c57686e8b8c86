/**
 * Graceful shutdown, the cases `boot.test.ts` does not cover: a streamed turn that ends within
 * the deadline finishes normally while the server closes (its whole stream, then `done`; its
 * thread saved), and a request that reaches the draining server is answered with the contract's
 * JSON error (503), never cut or served. (A turn past the deadline is aborted: boot.test.ts.)
 */
import { mkdtempSync, rmSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { definePlugin, defineTool, type EventSink } from "@plugboard/core"
import { ScriptedChatModel } from "@plugboard/models"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { createOracleApp, quietLogger } from "../src/index.js"
import { call, headersFor, newSession, stream, user } from "./helpers.js"

/** A tool that takes `ms` and then answers (it stops early only if its turn is aborted). */
const briefJob = (ms: number) =>
  definePlugin({
    name: "brief-job",
    manifest: {
      title: "Brief job",
      summary: "Runs a short background job.",
      whenToUse: ["When asked to run the brief job."],
      visibility: "always"
    },
    tools: [
      defineTool({
        name: "run_brief_job",
        description: "Runs the brief job.",
        input: Schema.Struct({}),
        handler: (_input, context) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => resolve("finished"), ms)
            context.signal.addEventListener("abort", () => {
              clearTimeout(timer)
              reject(new Error("the job was cancelled"))
            })
          })
      })
    ]
  })

/** Writes a raw HTTP request on an open socket; resolves with the response text when the server ends it. */
const rawRequest = (socket: Socket, request: string) =>
  new Promise<string>((resolve) => {
    let text = ""
    socket.on("data", (d) => {
      text += d.toString()
    })
    socket.on("close", () => resolve(text))
    socket.write(request)
  })

const boot = (dir: string) =>
  createOracleApp({
    plugins: [briefJob(400)],
    logger: quietLogger,
    model: ScriptedChatModel.script([{ tool: "run_brief_job" }, "The brief job finished."]),
    env: { PLUGBOARD_DATA_DIR: dir, THROTTLE_LIMIT: "1000" }
  })

describe("graceful close within the deadline", () => {
  it("a running turn completes (full stream, done, saved); a request on the draining server gets a JSON 503", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-shutdown-"))
    try {
      const app = await boot(dir)
      const { url, port } = await app.listen(0, "127.0.0.1")
      const u = await user(app.oracleDid)
      const session = await newSession(url, u.headers)
      // A connection opened before the close, used only once the server drains.
      const early = await new Promise<Socket>((resolve) => {
        const s = connect(port, "127.0.0.1", () => resolve(s))
      })

      const { events } = await stream(url, session, u.headers, "Run the brief job")
      const seen: Array<EventSink.AgentEvent> = []
      let closing: Promise<void> | undefined
      let drainingAnswer: Promise<string> | undefined
      let closedAfterDone = false
      for await (const e of events) {
        seen.push(e)
        if (e._tag === "tool_call" && e.status === "isRunning") {
          closing = app.close(5_000)
          void closing.then(() => {
            closedAfterDone = seen.at(-1)?._tag === "done"
          })
          drainingAnswer = rawRequest(
            early,
            `GET /sessions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${u.headers.authorization}\r\nx-auth-type: ucan\r\n\r\n`
          )
        }
      }
      expect(closing).toBeDefined()
      // The script exposes no reasoning, so the stream carries none (there is no placeholder).
      expect(seen.some((e) => e._tag === "reasoning")).toBe(false)
      const kinds = seen
        .filter((e) => e._tag !== "reasoning" && e._tag !== "run")
        .map((e) => (e._tag === "tool_call" ? `${e.toolName}:${e.status}` : e._tag))
        .filter((k, i, all) => k !== "message" || all[i - 1] !== "message")
      expect(kinds).toEqual(["run_brief_job:isRunning", "run_brief_job:done", "message", "done"])
      const finished = seen.find((e) => e._tag === "tool_call" && e.status === "done") as { output?: string }
      expect(finished.output).toBe("finished")
      const answer = seen
        .filter((e) => e._tag === "message")
        .map((e) => (e as { content: string }).content)
        .join("")
      expect(answer).toBe("The brief job finished.")

      const raw = await drainingAnswer!
      expect(raw).toMatch(/^HTTP\/1\.1 503/)
      expect(raw.toLowerCase()).toMatch(/content-type: application\/json/)
      expect(JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4))).toEqual({
        statusCode: 503,
        message: "The server is shutting down.",
        error: "Service Unavailable"
      })
      await closing
      expect(closedAfterDone).toBe(true)
      // New connections are no longer accepted.
      await expect(fetch(`${url}/health`)).rejects.toThrow()

      // The turn was saved: a server over the same data serves its whole exchange.
      const again = await boot(dir)
      try {
        const { url: url2 } = await again.listen(0, "127.0.0.1")
        const history = await call(`${url2}/messages/${session}`, {
          headers: await headersFor(u.signer, again.oracleDid)
        })
        expect(history.status).toBe(200)
        expect(history.body.messages.map((m: { type: string }) => m.type)).toEqual([
          "human",
          "ai",
          "tool",
          "ai"
        ])
        expect(history.body.messages[3].content).toBe("The brief job finished.")
      } finally {
        await again.close(1_000)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
