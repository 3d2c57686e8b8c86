/** The README's first plugin ("Your first plugin"): one on-demand tool, an honest manifest, no I/O. */
import { definePlugin, defineTool } from "@plugboard/core"
import { Schema } from "effect"

export const wordCount = definePlugin({
  name: "word-count",
  manifest: {
    title: "Word Count",
    summary: "Counts the words, characters and sentences of a text.",
    whenToUse: ["The user asks how long a text is, in words, characters or sentences."],
    examples: [
      { user: "How many words are in: the cat sat", tool: "count_words", args: { text: "the cat sat" } }
    ],
    tags: ["text", "words"],
    category: "data"
  },
  tools: [
    defineTool({
      name: "count_words",
      description: "Words, characters and sentences of a text.",
      input: Schema.Struct({ text: Schema.String }),
      handler: ({ text }) => ({
        words: text.split(/\s+/).filter(Boolean).length,
        characters: text.length,
        sentences: text.split(/[.!?]+/).filter((s) => s.trim() !== "").length
      })
    })
  ]
})
