/** The README's 20-line plugin builds clean, answers, and is discovered and called by the offline router. */

import { Catalog, makeRuntimeContext } from "@plugboard/core"
import { createMainAgent, MemorySaver, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { describe, expect, it } from "vitest"
import { weather } from "./weather.js"
import { wordCount } from "./word-count.js"

describe("the word-count plugin", () => {
  it("builds with no errors or warnings and counts", async () => {
    expect(Catalog.unsafeMake([wordCount]).warnings).toEqual([])
    const ctx = makeRuntimeContext({ state: { messages: [] } as never, sessionId: "s", did: "did:key:z" })
    expect(await wordCount.tools[0].handler({ text: "One two. Three four five!" }, ctx)).toEqual({
      words: 5,
      characters: 25,
      sentences: 2
    })
  })

  it("is loaded and called when a user asks for it", async () => {
    const catalog = Catalog.unsafeMake([weather, wordCount])
    const agent = await createMainAgent({
      catalog,
      model: ScriptedChatModel.router({ catalog }),
      checkpointer: new MemorySaver(),
      request: { did: "did:key:z", sessionId: "s" }
    })
    const turn = await runTurn(agent, { message: "How many words are in: to be or not to be" })
    expect(turn.state.loadedPlugins).toEqual(["word-count"])
    expect(turn.answer).toContain("words: 6")
  })
})
