// A consumer's plugin module in plain JavaScript, as a user of the published packages writes it.
import { definePlugin, defineTool } from "@plugboard/core"
import { Schema } from "effect"

export const plugins = [
  definePlugin({
    name: "greeter",
    manifest: {
      title: "Greeter",
      summary: "Greets people by name.",
      whenToUse: ["When the user asks to greet someone."],
      examples: [{ user: "Greet Ada", tool: "greet", args: { name: "Ada" } }],
      tags: ["greeting"],
      category: "communication",
      visibility: "on-demand"
    },
    tools: [
      defineTool({
        name: "greet",
        description: "Returns a greeting for a name.",
        input: Schema.Struct({ name: Schema.String }),
        handler: ({ name }) => `Hello, ${name}!`
      })
    ]
  })
]
