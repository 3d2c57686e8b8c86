/**
 * The conformance suite of the `ChatModel` port: identity, and the refusals every
 * implementation makes before spending a call (so it needs no network). The factory also
 * supplies one request the model can answer, to check the answer's shape.
 *
 * ```ts
 * ChatModelConformance.run("scripted", () => Effect.map(ChatModel.makeScripted(["hi"]), (model) => ({ model })))
 * ```
 */
import type { ChatModel } from "@plugboard/core"
import { Effect, Exit, type Scope } from "effect"
import { describe, expect, it } from "vitest"
import { acquire, type Factory, failureOf } from "./Factory.js"

/** A model under test, and (optionally) a request it can answer offline. */
export interface ChatModelHarness {
  readonly model: ChatModel.ChatModelService
  readonly answerable?: ChatModel.ChatRequest
}

const hello: ChatModel.ChatRequest = { messages: [{ role: "user", content: "Hello" }] }

/** Registers the ChatModel conformance suite for one implementation. */
export const run = (name: string, factory: Factory<ChatModelHarness>): void => {
  const withModel = <A>(body: (h: ChatModelHarness) => Effect.Effect<A, unknown, Scope.Scope>) =>
    Effect.runPromise(Effect.scoped(Effect.flatMap(acquire(factory), body)))

  const refused = (
    model: ChatModel.ChatModelService,
    request: ChatModel.ChatRequest,
    reason: ChatModel.ChatModelError["reason"]
  ) =>
    Effect.map(Effect.exit(model.invoke(request)), (exit) => {
      expect(Exit.isFailure(exit)).toBe(true)
      const error = failureOf(exit)
      expect(error?._tag).toBe("ChatModelError")
      expect(error?.reason).toBe(reason)
    })

  describe(`ChatModel conformance: ${name}`, () => {
    it("names its provider and model", () =>
      withModel(({ model }) =>
        Effect.sync(() => {
          expect(model.info.provider).toMatch(/\S/)
          expect(model.info.model).toMatch(/\S/)
        })
      ))

    it("refuses malformed requests with 'invalid-request'", () =>
      withModel(({ model }) =>
        Effect.gen(function* () {
          yield* refused(model, { messages: [] }, "invalid-request")
          const tool = { name: "t", description: "d", parameters: { type: "object" } }
          yield* refused(model, { ...hello, tools: [tool, tool] }, "invalid-request")
          yield* refused(model, { ...hello, tools: [{ ...tool, name: "" }] }, "invalid-request")
          yield* refused(
            model,
            {
              messages: [
                { role: "user", content: "x" },
                { role: "tool", content: "r", toolCallId: "nope" }
              ]
            },
            "invalid-request"
          )
        })
      ))

    it("an aborted call fails 'aborted'", () =>
      withModel(({ model, answerable }) =>
        Effect.gen(function* () {
          const controller = new AbortController()
          controller.abort()
          yield* refused(model, { ...(answerable ?? hello), signal: controller.signal }, "aborted")
        })
      ))

    it("answers as an assistant message", async (ctx) => {
      const has = await withModel((h) => Effect.succeed(h.answerable !== undefined))
      if (!has) ctx.skip()
      await withModel(({ model, answerable }) =>
        Effect.gen(function* () {
          const response = yield* model.invoke(answerable!)
          expect(response.message.role).toBe("assistant")
          expect(typeof response.message.content).toBe("string")
          for (const call of response.message.toolCalls ?? []) {
            expect(call.id).toMatch(/\S/)
            expect(typeof call.args).toBe("object")
          }
          if (response.usage !== undefined) {
            expect(Number.isInteger(response.usage.inputTokens)).toBe(true)
            expect(Number.isInteger(response.usage.outputTokens)).toBe(true)
          }
        })
      )
    })
  })
}
