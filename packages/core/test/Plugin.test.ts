import { definePlugin, defineTool, InvalidPluginNameError, isPluginName } from "@plugboard/core"
import { Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const manifest = { title: "Weather", summary: "Weather lookups.", whenToUse: ["weather questions"] }

describe("definePlugin", () => {
  it("returns the plugin unchanged for a kebab-case name", () => {
    const getCurrentWeather = defineTool({
      name: "get_current_weather",
      description: "Current weather for a city.",
      input: Schema.Struct({ city: Schema.String }),
      handler: ({ city }) => `sunny in ${city}`
    })
    const plugin = { name: "weather-v2", manifest, tools: [getCurrentWeather] }
    expect(definePlugin(plugin)).toBe(plugin)
  })

  it.each(["Weather", "weather_app", "weather app", "-weather", "weather-", "weather--app", "2weather", ""])(
    "rejects the non-kebab name %j with InvalidPluginNameError",
    (name) => {
      expect(() => definePlugin({ name, manifest })).toThrow(InvalidPluginNameError)
      expect(() => definePlugin({ name, manifest })).toThrow(
        `Plugin name '${name}' is not kebab-case (lowercase letters, digits and single dashes).`
      )
    }
  )

  it("rejects a name that is not a string (RegExp#test would coerce undefined to 'undefined')", () => {
    expect(() => definePlugin({ name: undefined as unknown as string, manifest })).toThrow(
      InvalidPluginNameError
    )
    expect(isPluginName(undefined as unknown as string)).toBe(false)
    expect(isPluginName(null as unknown as string)).toBe(false)
  })
})

describe("isPluginName", () => {
  it("accepts kebab-case names", () => {
    for (const name of ["a", "weather", "domain-indexer", "user-preferences", "web3-tools", "a1-b2-c3"]) {
      expect(isPluginName(name)).toBe(true)
    }
  })

  it("property: accepted names are exactly lowercase words joined by single dashes", () => {
    const word = fc.stringMatching(/^[a-z0-9]{1,8}$/)
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 5 }), (words) => {
        const name = words.join("-")
        expect(isPluginName(name)).toBe(/^[a-z]/.test(name))
      })
    )
    fc.assert(
      fc.property(fc.string(), (name) => {
        if (isPluginName(name)) {
          expect(name).toBe(name.toLowerCase())
          expect(name.split("-").every((part) => /^[a-z0-9]+$/.test(part))).toBe(true)
        }
      })
    )
  })
})
