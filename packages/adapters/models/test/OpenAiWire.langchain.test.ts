/**
 * The scripted model on the OpenAI wire, driven by LangChain's `ChatOpenAI` as plugboard's own
 * `openai-compatible` provider builds it (`LLM_PROVIDER=openai-compatible`, `OPENAI_BASE_URL` the
 * wire's URL): bound tools reach the router, its tool calls come back parsed, whether invoked or
 * streamed. So an oracle configured for a real OpenAI-compatible server can be run against the
 * offline router through the same provider code.
 */
import { HumanMessage } from "@langchain/core/messages"
import { Catalog } from "@plugboard/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chatModelFromEnv, type OpenAiWireServer, ScriptedChatModel, serveOpenAiWire } from "../src/index.js"
import { routerPlugins } from "./fixtures.js"
import { catalogHost } from "./wireHarness.js"

describe("LangChain's ChatOpenAI (the openai-compatible provider) against the wire", () => {
  let server: OpenAiWireServer
  beforeAll(async () => {
    server = await serveOpenAiWire(ScriptedChatModel.router({ catalog: Catalog.unsafeMake(routerPlugins) }))
  })
  afterAll(() => server.close())

  const provider = () =>
    chatModelFromEnv({
      LLM_PROVIDER: "openai-compatible",
      LLM_MODEL: "scripted-router",
      OPENAI_BASE_URL: server.url
    })

  it("invoked and streamed with bound tools, it gets the router's tool call", async () => {
    const tools = catalogHost(routerPlugins).tools()
    const bound = provider().bindTools!(tools)
    const user = [new HumanMessage("What's the weather in Berlin?")]
    const invoked = await bound.invoke(user)
    expect(invoked.tool_calls?.map((c) => [c.name, c.args])).toEqual([
      ["load_capability", { names: ["weather"] }]
    ])
    expect(invoked.usage_metadata?.input_tokens).toBeGreaterThan(0)

    let streamed: Awaited<ReturnType<typeof bound.invoke>> | undefined
    for await (const chunk of await bound.stream(user))
      streamed = streamed === undefined ? chunk : streamed.concat(chunk)
    expect(streamed?.tool_calls?.map((c) => [c.name, c.args])).toEqual([
      ["load_capability", { names: ["weather"] }]
    ])
  })
})
