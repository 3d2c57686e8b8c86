/**
 * A model endpoint that stalls mid-answer, through the server: the idle bound ends the turn, the
 * client's `done` says which bound with the text it saw, and that text is saved, marked cut off.
 * The endpoint is a real local server on the OpenAI wire (the adapters' test servers).
 */
import { describe, expect, it } from "vitest"
import { startStalling } from "../../adapters/models/test/stallingProviders.js"
import { call, collect, start, stream, user } from "./helpers.js"

describe("a model that stalls mid-answer", () => {
  it("ends the turn at LLM_IDLE_TIMEOUT_MS: done says model-idle-timeout, the partial answer is kept", async () => {
    const endpoint = await startStalling("openai", { kind: "one-token", text: "It is sunny in" })
    const server = await start({
      env: {
        LLM_PROVIDER: "openai",
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: endpoint.baseUrl,
        LLM_MODEL: "gpt-test",
        LLM_IDLE_TIMEOUT_MS: "300"
      }
    })
    try {
      const u = await user(server.app.oracleDid)
      const events = await collect((await stream(server.url, "stalled", u.headers, "Weather?")).events)
      expect(events.at(-1)).toEqual({
        _tag: "done",
        status: "failed",
        partialText: "It is sunny in",
        reason: "model-idle-timeout"
      })
      const page = await call(`${server.url}/sessions/stalled/messages`, { headers: u.headers })
      const last = page.body.messages.at(-1)
      expect(last).toMatchObject({ content: "It is sunny in", cutOff: true })
      // The bound cancelled the HTTP request to the endpoint.
      expect(endpoint.closed()).toBe(endpoint.requests())
    } finally {
      await server.stop()
      await endpoint.close()
    }
  })
})
