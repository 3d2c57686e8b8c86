/**
 * What a failure tells the client (issue 36, item 11; the outage part is in
 * outages.engines.test.ts): a failed run's reason is a reason, never a JavaScript class name, and
 * `/health` names the provider that was configured, not the client class it runs on.
 */
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { call, collect, newSession, start, stream, user } from "./helpers.js"

describe("a failed run's reason (issue 36, item 11)", () => {
  it("a model that throws a TypeError ends the run failed with reason `turn-failed`; the error event keeps its message", async () => {
    const server = await start({
      model: new ScriptedChatModel({
        respond: () => {
          throw new TypeError("Cannot read properties of undefined (reading 'choices')")
        }
      })
    })
    try {
      const alice = await user(server.app.oracleDid)
      const session = await newSession(server.url, alice.headers)
      const { events } = await stream(server.url, session, alice.headers, "hello")
      const all = await collect(events)
      const done = all.at(-1)
      expect(done).toMatchObject({ _tag: "done", status: "failed", reason: "turn-failed" })
      const error = all.find((e) => e._tag === "error") as { error?: string; code?: string } | undefined
      expect(error?.error).toMatch(/reading 'choices'/)
      expect(JSON.stringify(all)).not.toMatch(/"TypeError"/)
      const json = await call(`${server.url}/messages/${session}`, {
        method: "POST",
        headers: alice.headers,
        body: { message: "again" }
      })
      expect(json.status).toBe(502)
      expect(json.body.error).toBe("turn-failed")
    } finally {
      await server.stop()
    }
  })
})

describe("/health names the configured provider (issue 36, item 11)", () => {
  it("LLM_PROVIDER=openai-compatible reads `openai-compatible`, not the OpenAI client's `openai`", async () => {
    // No call is made: /health only describes the model.
    const server = await start({
      env: {
        LLM_PROVIDER: "openai-compatible",
        OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
        LLM_MODEL: "local-model"
      }
    })
    try {
      const health = await call(`${server.url}/health`)
      expect(health.body.model).toEqual({ id: "local-model", provider: "openai-compatible" })
      const models = await call(`${server.url}/models`)
      expect(models.body.models[0]).toEqual({ id: "local-model", provider: "openai-compatible" })
    } finally {
      await server.stop()
    }
  })
})
