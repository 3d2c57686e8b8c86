/**
 * Plugins the router tests rank: the reference weather plugin
 * (docs/spec/manifest.md#the-reference-manifest) and two neighbours.
 */
import { definePlugin, defineTool } from "@plugboard/core"
import { Schema } from "effect"

/** Inputs the weather handlers received, in call order. */
export const weatherCalls: Array<{ readonly tool: string; readonly city: string }> = []

const City = Schema.String.pipe(Schema.minLength(1))
/** The reference weather plugin; its handlers count their calls in `weatherCalls`. */
export const weather = definePlugin({
  name: "weather",
  manifest: {
    title: "Weather",
    summary: "Weather lookups via Open-Meteo (no API key required).",
    whenToUse: [
      "Whenever asked about current weather, temperature, precipitation, or wind in any city.",
      "Any question related to forecasts (today, tomorrow, next week) for any location.",
      'When the user asks "what should I wear", "do I need an umbrella", or similar outfit guidance.'
    ],
    examples: [
      { user: "What's the weather in Berlin?", tool: "get_current_weather", args: { city: "Berlin" } },
      {
        user: "Forecast for Tokyo this week.",
        tool: "get_weather_forecast",
        args: { city: "Tokyo", days: 7 }
      }
    ],
    tags: ["weather", "forecast", "outfit"],
    category: "data",
    visibility: "on-demand",
    stability: "experimental"
  },
  tools: [
    defineTool({
      name: "get_current_weather",
      description: "Current conditions for a city.",
      input: Schema.Struct({ city: City }),
      handler: ({ city }) => {
        weatherCalls.push({ tool: "get_current_weather", city })
        return { city, temperatureC: 18.5, condition: "clear" }
      }
    }),
    defineTool({
      name: "get_weather_forecast",
      description: "Daily forecast for a city.",
      input: Schema.Struct({ city: City, days: Schema.Int }),
      handler: ({ city, days }) => {
        weatherCalls.push({ tool: "get_weather_forecast", city })
        return { city, days }
      }
    })
  ]
})
const email = definePlugin({
  name: "email",
  manifest: {
    title: "Email",
    summary: "Send and search email messages.",
    whenToUse: ["When the user wants to send, draft or find an email."],
    examples: [{ user: "Email Alice the report", tool: "send_email", args: { to: "Alice" } }],
    visibility: "on-demand"
  },
  tools: [
    defineTool({
      name: "send_email",
      description: "Send an email.",
      input: Schema.Struct({ to: Schema.String }),
      handler: () => "sent"
    })
  ]
})
const memory = definePlugin({
  name: "memory",
  manifest: {
    title: "Memory",
    summary: "Durable memory across conversations.",
    whenToUse: ["When the user asks you to remember or recall a fact about them."],
    examples: [
      { user: "Remember that my favourite colour is green", tool: "remember", args: { fact: "green" } }
    ],
    visibility: "always"
  },
  tools: [
    defineTool({
      name: "remember",
      description: "Store a fact.",
      input: Schema.Struct({ fact: Schema.String }),
      handler: () => "ok"
    })
  ]
})

/** weather (on-demand), email (on-demand), memory (always). */
export const routerPlugins = [weather, email, memory]
