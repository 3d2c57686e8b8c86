/**
 * `loadedFromMessages` reads back exactly what core's `load_capability` answers say they loaded,
 * whatever else the history holds: for random sequences of loads (known, unknown, silent and
 * repeated names) written as AI SDK tool results, ok or error, among other messages.
 */
import { loadedFromMessages } from "@plugboard/ai-sdk"
import { Catalog, LoadedPlugins, MetaTools } from "@plugboard/core"
import { Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeExamplePlugins } from "../../../../examples/catalog/index.js"

const catalog = Catalog.unsafeMake(makeExamplePlugins({ now: () => new Date(0) }))
const names = [...catalog.byName.keys(), "no-such-plugin", 'a "quoted" name]']

describe("loadedFromMessages", () => {
  it("is the union, in order, of every load answer's newlyLoaded (property)", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            names: fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 4 }),
            error: fc.boolean(),
            noise: fc.constantFrom("none", "user", "other-tool")
          }),
          { maxLength: 8 }
        ),
        (turns) => {
          let loaded = LoadedPlugins.empty
          const messages: Array<{ role: string; content: unknown }> = []
          turns.forEach((t, i) => {
            if (t.noise === "user") messages.push({ role: "user", content: '{"newlyLoaded":["weather"]}' })
            if (t.noise === "other-tool") {
              messages.push({
                role: "tool",
                content: [
                  {
                    type: "tool-result",
                    toolCallId: `o${i}`,
                    toolName: "echo",
                    output: { type: "text", value: '{"newlyLoaded":["maps"]}' }
                  }
                ]
              })
            }
            const result = MetaTools.loadCapability(catalog, loaded, { names: t.names })
            if (Either.isRight(result)) loaded = result.right.loadedPlugins
            messages.push({
              role: "tool",
              content: [
                {
                  type: "tool-result",
                  toolCallId: `l${i}`,
                  toolName: "load_capability",
                  output: {
                    type: t.error ? "error-text" : "text",
                    value: MetaTools.formatToolMessage(Either.merge(result))
                  }
                }
              ]
            })
          })
          expect(loadedFromMessages(messages)).toEqual(loaded)
        }
      )
    )
  })
})
