/**
 * The one-tool, always-tier weather plugin the delta-message tests and the conversation
 * benchmarks (SQLite and Postgres) run their turns with: every turn calls `get_forecast` once.
 */
import type { Plugin } from "@plugboard/core"
import { Schema } from "effect"

const forecastWith = (summary: string, result: (city: string) => unknown): Plugin => ({
  name: "weather",
  manifest: {
    title: "Weather",
    summary,
    whenToUse: ["When the user asks about the weather."],
    visibility: "always"
  },
  tools: [
    {
      name: "get_forecast",
      description: "The forecast for a city.",
      input: Schema.Struct({ city: Schema.String }),
      handler: (input: { city: string }) => result(input.city)
    }
  ]
})

/** A short answer per call: `{ city, summary: "light rain" }`. */
export const forecastPlugin: Plugin = forecastWith("Forecasts for a city.", (city) => ({
  city,
  summary: "light rain"
}))

/** A sentence of forecast prose, repeated to give texts a realistic size. */
export const lorem =
  "The forecast for Lisbon shows light rain in the morning, clearing by noon, with highs near 19°C. "

/** A tool result of a realistic size (about 300 characters), for the conversation benchmarks. */
export const longForecastPlugin: Plugin = forecastWith(
  "Forecasts and current conditions for a city.",
  (city) => ({
    city,
    days: 3,
    summary: lorem.repeat(3)
  })
)
