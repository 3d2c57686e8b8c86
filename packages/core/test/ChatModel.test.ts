import { ChatModelConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as ChatModel from "../src/ChatModel.js"

ChatModelConformance.run("scripted", () =>
  Effect.map(ChatModel.makeScripted(["Hello there."]), (model) => ({
    model,
    answerable: { messages: [{ role: "user", content: "Hi" }] }
  }))
)

const reasonOf = (exit: Exit.Exit<unknown, ChatModel.ChatModelError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : undefined

describe("ChatModel scripted", () => {
  it("replays its steps in order, records requests, then reports exhaustion", async () => {
    const weather = {
      name: "get_current_weather",
      description: "[Weather] Now",
      parameters: { type: "object" }
    }
    const model = await Effect.runPromise(
      ChatModel.makeScripted([
        {
          role: "assistant",
          content: "",
          toolCalls: [{ id: "c1", name: "get_current_weather", args: { city: "Berlin" } }]
        },
        (request) => `Saw ${request.messages.length} messages`,
        new ChatModel.ChatModelError({ reason: "rate-limited", message: "slow down" })
      ])
    )
    const first = await Effect.runPromise(
      model.invoke({ messages: [{ role: "user", content: "Weather in Berlin?" }], tools: [weather] })
    )
    expect(first.message.toolCalls?.[0]?.name).toBe("get_current_weather")
    const second = await Effect.runPromise(
      model.invoke({
        messages: [
          { role: "user", content: "Weather in Berlin?" },
          first.message,
          { role: "tool", content: "21 °C", toolCallId: "c1" }
        ]
      })
    )
    expect(second.message).toEqual({ role: "assistant", content: "Saw 3 messages" })
    expect(
      reasonOf(await Effect.runPromiseExit(model.invoke({ messages: [{ role: "user", content: "x" }] })))
    ).toBe("rate-limited")
    const exhausted = await Effect.runPromiseExit(
      model.invoke({ messages: [{ role: "user", content: "x" }] })
    )
    expect(reasonOf(exhausted)).toBe("script-exhausted")
    const requests = await Effect.runPromise(model.requests)
    expect(requests).toHaveLength(4)
    expect(requests[0]?.tools?.map((t) => t.name)).toEqual(["get_current_weather"])
  })

  it("a refused request does not consume a step", async () => {
    const model = await Effect.runPromise(ChatModel.makeScripted(["only"]))
    expect(reasonOf(await Effect.runPromiseExit(model.invoke({ messages: [] })))).toBe("invalid-request")
    const ok = await Effect.runPromise(model.invoke({ messages: [{ role: "user", content: "x" }] }))
    expect(ok.message.content).toBe("only")
  })

  it("layerScripted provides the port with its identity", async () => {
    const info = await Effect.gen(function* () {
      return (yield* ChatModel.ChatModel).info
    }).pipe(
      Effect.provide(ChatModel.layerScripted([], { provider: "scripted", model: "router" })),
      Effect.runPromise
    )
    expect(info).toEqual({ provider: "scripted", model: "router" })
  })
})
