/**
 * The reference `weather` plugin the specification describes
 * (docs/spec/manifest.md#the-reference-manifest): its manifest uses every field and passes with no
 * error and no warning. Its handlers answer from a small deterministic table instead of calling
 * Open-Meteo, so tests and the offline demo never touch the network.
 */
import { definePlugin, defineTool } from "@plugboard/core"
import { Schema } from "effect"

// Conditions that fit the temperature: no snow on a warm day, no showers in a deep frost.
const COLD = ["clear", "overcast", "fog", "light snow", "snow"] as const
const MILD = ["clear", "partly cloudy", "overcast", "light rain", "showers", "fog"] as const
const WARM = ["clear", "partly cloudy", "overcast", "showers", "thunderstorms"] as const

/** A stable pseudo-random number in [0, 1) for a string: the same city always gets the same weather. */
const unitHash = (text: string, salt: number): number => {
  let h = 2166136261 ^ salt
  for (const ch of text.toLowerCase()) h = Math.imul(h ^ ch.charCodeAt(0), 16777619)
  return ((h >>> 0) % 10_000) / 10_000
}

const dayWeather = (city: string, day: number) => {
  const temperatureC = Math.round((-5 + unitHash(city, day) * 35) * 10) / 10
  const conditions = temperatureC < 2 ? COLD : temperatureC < 20 ? MILD : WARM
  return {
    temperatureC,
    condition: conditions[Math.floor(unitHash(city, day + 101) * conditions.length)]!,
    precipitationMm: Math.round(unitHash(city, day + 202) * 120) / 10,
    windKmh: Math.round(unitHash(city, day + 303) * 400) / 10
  }
}

const City = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(100))

export const getCurrentWeather = defineTool({
  name: "get_current_weather",
  description: "Current temperature, conditions, precipitation and wind for a city.",
  input: Schema.Struct({ city: City.annotations({ description: "City name, e.g. Berlin" }) }),
  handler: ({ city }) => ({ city, source: "offline fixture", ...dayWeather(city, 0) })
})

export const getWeatherForecast = defineTool({
  name: "get_weather_forecast",
  description: "Daily forecast for a city, up to 14 days ahead.",
  input: Schema.Struct({
    city: City.annotations({ description: "City name, e.g. Tokyo" }),
    days: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 14)), { default: () => 3 })
  }),
  handler: ({ city, days }) => ({
    city,
    source: "offline fixture",
    days: Array.from({ length: days }, (_, i) => ({ day: i + 1, ...dayWeather(city, i + 1) }))
  })
})

/** The reference weather plugin (docs/spec/manifest.md#the-reference-manifest). */
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
    whenNotToUse: [
      "Questions about historical or long-term climate data.",
      "Locations smaller than city-level precision."
    ],
    examples: [
      {
        user: "What's the weather in Berlin?",
        tool: "get_current_weather",
        args: { city: "Berlin" }
      },
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
  tools: [getCurrentWeather, getWeatherForecast]
})
