import { exampleToolNames, type PluginManifest, validateManifest } from "@plugboard/core"
import { describe, expect, it } from "vitest"

/** The reference manifest, the weather plugin's (docs/spec/manifest.md#the-reference-manifest). */
const weather: PluginManifest = {
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
}
const weatherTools = ["get_current_weather", "get_weather_forecast"]

/** The weather manifest with some fields replaced (`undefined` removes a field). */
const withFields = (fields: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...weather, ...fields }
  for (const [k, v] of Object.entries(fields)) if (v === undefined) delete out[k]
  return out
}

const check = (manifest: unknown, toolNames?: readonly string[]) =>
  validateManifest(manifest, "weather", toolNames)

/** Asserts exactly these errors and no warnings. */
const expectErrors = (manifest: unknown, errors: string[], toolNames?: readonly string[]) => {
  const result = check(manifest, toolNames)
  expect(result.errors).toEqual(errors)
  expect(result.warnings).toEqual([])
  expect(result.valid).toBe(false)
}

/** Asserts exactly these warnings, no errors, still valid. */
const expectWarnings = (manifest: unknown, warnings: string[]) => {
  const result = check(manifest, weatherTools)
  expect(result.errors).toEqual([])
  expect(result.warnings).toEqual(warnings)
  expect(result.valid).toBe(true)
}

describe("validateManifest: the reference manifest", () => {
  it("validates with no errors and no warnings, with and without tool names", () => {
    expect(check(weather, weatherTools)).toEqual({ valid: true, errors: [], warnings: [] })
    expect(check(weather)).toEqual({ valid: true, errors: [], warnings: [] })
  })

  it("accepts the minimal manifest (title, summary, one whenToUse)", () => {
    expect(check({ title: "W", summary: "s", whenToUse: ["x"] })).toEqual({
      valid: true,
      errors: [],
      warnings: []
    })
  })
})

describe("validateManifest: hard rules", () => {
  it("a manifest that is not an object", () => {
    expectErrors(null, ["Plugin 'weather' manifest must be an object (got null)."])
    expectErrors(undefined, ["Plugin 'weather' manifest must be an object (got undefined)."])
    expectErrors([weather], ["Plugin 'weather' manifest must be an object (got array)."])
    expectErrors("Weather", ["Plugin 'weather' manifest must be an object (got string)."])
  })

  it("missing required field title", () => {
    expectErrors(withFields({ title: undefined }), [
      "Plugin 'weather' manifest is missing required field 'title'."
    ])
  })

  it("missing required field summary", () => {
    expectErrors(withFields({ summary: undefined }), [
      "Plugin 'weather' manifest is missing required field 'summary'."
    ])
  })

  it("title and summary of the wrong type", () => {
    expectErrors(withFields({ title: 42, summary: null }), [
      "Plugin 'weather' manifest field 'title' must be a string (got number).",
      "Plugin 'weather' manifest field 'summary' must be a string (got null)."
    ])
  })

  it("empty or whitespace-only summary", () => {
    expectErrors(withFields({ summary: "" }), [
      "Plugin 'weather' manifest field 'summary' must not be empty."
    ])
    expectErrors(withFields({ summary: " \n\t " }), [
      "Plugin 'weather' manifest field 'summary' must not be empty."
    ])
  })

  it("no whenToUse entry when not silent (missing, empty, blank-only), for both visible tiers", () => {
    const onDemand =
      "Plugin 'weather' manifest field 'whenToUse' needs at least one non-empty entry when visibility is 'on-demand' (only silent plugins may omit it)."
    expectErrors(withFields({ whenToUse: undefined }), [onDemand])
    expectErrors(withFields({ whenToUse: [] }), [onDemand])
    expectErrors(withFields({ whenToUse: [], visibility: "always" }), [
      "Plugin 'weather' manifest field 'whenToUse' needs at least one non-empty entry when visibility is 'always' (only silent plugins may omit it)."
    ])
    const blank = check(withFields({ whenToUse: ["  "] }))
    expect(blank.errors).toEqual([onDemand])
    expect(blank.warnings).toEqual(["Plugin 'weather' manifest field 'whenToUse[0]' is empty."])
  })

  it("a silent plugin needs no whenToUse", () => {
    expect(check(withFields({ whenToUse: undefined, visibility: "silent" }), weatherTools).valid).toBe(true)
    expect(check(withFields({ whenToUse: [], visibility: "silent" }), weatherTools).valid).toBe(true)
  })

  it("array fields of the wrong type, and wrong entries inside them", () => {
    expectErrors(withFields({ whenToUse: "weather questions" }), [
      "Plugin 'weather' manifest field 'whenToUse' must be an array of strings (got string)."
    ])
    expectErrors(withFields({ whenToUse: ["ok", 3] }), [
      "Plugin 'weather' manifest field 'whenToUse[1]' must be a string (got number)."
    ])
    expectErrors(withFields({ whenNotToUse: { a: 1 } }), [
      "Plugin 'weather' manifest field 'whenNotToUse' must be an array of strings (got object)."
    ])
    expectErrors(withFields({ whenNotToUse: [null] }), [
      "Plugin 'weather' manifest field 'whenNotToUse[0]' must be a string (got null)."
    ])
    expectErrors(withFields({ tags: "weather" }), [
      "Plugin 'weather' manifest field 'tags' must be an array of strings (got string)."
    ])
    expectErrors(withFields({ tags: ["ok", true] }), [
      "Plugin 'weather' manifest field 'tags[1]' must be a string (got boolean)."
    ])
  })

  it("examples of the wrong type", () => {
    expectErrors(withFields({ examples: { user: "x", tool: "y" } }), [
      "Plugin 'weather' manifest field 'examples' must be an array (got object)."
    ])
    expectErrors(withFields({ examples: ["call get_current_weather"] }), [
      "Plugin 'weather' manifest field 'examples[0]' must be an object (got string)."
    ])
  })

  it("inside an example: missing user/tool, wrong types of every field", () => {
    expectErrors(withFields({ examples: [{}] }), [
      "Plugin 'weather' manifest is missing required field 'examples[0].user'.",
      "Plugin 'weather' manifest is missing required field 'examples[0].tool'."
    ])
    expectErrors(
      withFields({
        examples: [
          weather.examples?.[0],
          { user: 1, thought: false, tool: ["get_current_weather"], args: [1] }
        ]
      }),
      [
        "Plugin 'weather' manifest field 'examples[1].user' must be a string (got number).",
        "Plugin 'weather' manifest field 'examples[1].thought' must be a string (got boolean).",
        "Plugin 'weather' manifest field 'examples[1].tool' must be a string (got array).",
        "Plugin 'weather' manifest field 'examples[1].args' must be an object (got array)."
      ],
      weatherTools
    )
  })

  it("an example whose tool the plugin does not register (the spec's exact message)", () => {
    expectErrors(
      withFields({ examples: [{ user: "hi", tool: "foo" }] }),
      ["Plugin 'weather' manifest example references unknown tool 'foo'."],
      weatherTools
    )
  })

  it("checks example tools only when tool names are given", () => {
    expect(check(withFields({ examples: [{ user: "hi", tool: "foo" }] })).valid).toBe(true)
    // An empty list is a list: a plugin with no tools cannot have examples calling one.
    expect(check(weather, []).errors).toEqual([
      "Plugin 'weather' manifest example references unknown tool 'get_current_weather'.",
      "Plugin 'weather' manifest example references unknown tool 'get_weather_forecast'."
    ])
  })

  it("unknown visibility", () => {
    // No whenToUse error on top: the intended tier is unknown, guessing it would be noise.
    expectErrors(withFields({ visibility: "public", whenToUse: [] }), [
      "Plugin 'weather' manifest field 'visibility' has unknown value 'public' (expected one of 'always', 'on-demand', 'silent')."
    ])
  })

  it("unknown category", () => {
    expectErrors(withFields({ category: "weather" }), [
      "Plugin 'weather' manifest field 'category' has unknown value 'weather' (expected one of 'data', 'communication', 'automation', 'memory', 'integration', 'ui', 'auth', 'observability', 'core')."
    ])
  })

  it("unknown stability", () => {
    expectErrors(withFields({ stability: "alpha" }), [
      "Plugin 'weather' manifest field 'stability' has unknown value 'alpha' (expected one of 'stable', 'beta', 'experimental')."
    ])
  })

  it("enum fields of the wrong type", () => {
    expectErrors(withFields({ visibility: 1, category: null, stability: ["beta"] }), [
      "Plugin 'weather' manifest field 'visibility' must be one of 'always', 'on-demand', 'silent' (got number).",
      "Plugin 'weather' manifest field 'category' must be one of 'data', 'communication', 'automation', 'memory', 'integration', 'ui', 'auth', 'observability', 'core' (got null).",
      "Plugin 'weather' manifest field 'stability' must be one of 'stable', 'beta', 'experimental' (got array)."
    ])
  })

  it("collects every error at once, in field order", () => {
    const result = check(
      { summary: "", whenToUse: [], category: "x", examples: [{ user: "u", tool: "nope" }] },
      []
    )
    expect(result.errors).toEqual([
      "Plugin 'weather' manifest is missing required field 'title'.",
      "Plugin 'weather' manifest field 'summary' must not be empty.",
      "Plugin 'weather' manifest field 'category' has unknown value 'x' (expected one of 'data', 'communication', 'automation', 'memory', 'integration', 'ui', 'auth', 'observability', 'core').",
      "Plugin 'weather' manifest field 'whenToUse' needs at least one non-empty entry when visibility is 'on-demand' (only silent plugins may omit it).",
      "Plugin 'weather' manifest example references unknown tool 'nope'."
    ])
  })
})

describe("validateManifest: soft rules", () => {
  it("summary over 120 chars (120 is fine)", () => {
    expectWarnings(withFields({ summary: "s".repeat(120) }), [])
    expectWarnings(withFields({ summary: "s".repeat(121) }), [
      "Plugin 'weather' manifest field 'summary' is 121 chars (recommended at most 120)."
    ])
  })

  it("more than 8 whenToUse entries (8 is fine)", () => {
    expectWarnings(withFields({ whenToUse: Array.from({ length: 8 }, (_, i) => `case ${i}`) }), [])
    expectWarnings(withFields({ whenToUse: Array.from({ length: 9 }, (_, i) => `case ${i}`) }), [
      "Plugin 'weather' manifest field 'whenToUse' has 9 entries (recommended at most 8)."
    ])
  })

  it("a whenToUse entry over 100 chars (100 is fine)", () => {
    expectWarnings(withFields({ whenToUse: ["w".repeat(100)] }), [])
    expectWarnings(withFields({ whenToUse: ["ok", "w".repeat(101)] }), [
      "Plugin 'weather' manifest field 'whenToUse[1]' is 101 chars (recommended at most 100)."
    ])
  })

  it("a tag with uppercase letters", () => {
    expectWarnings(withFields({ tags: ["weather", "Forecast"] }), [
      "Plugin 'weather' manifest field 'tags[1]' has uppercase letters ('Forecast'); tags should be lowercase."
    ])
  })

  it("unknown extra keys warn but still boot (top level and inside examples)", () => {
    expectWarnings(
      withFields({ icon: "sun", examples: [{ user: "u", tool: "get_current_weather", note: 1 }] }),
      [
        "Plugin 'weather' manifest has unknown field 'examples[0].note' (ignored).",
        "Plugin 'weather' manifest has unknown field 'icon' (ignored)."
      ]
    )
  })

  it("a repeated tag, an empty title, a multi-line summary, an empty example user message", () => {
    expectWarnings(withFields({ tags: ["a", "a"] }), [
      "Plugin 'weather' manifest field 'tags[1]' repeats tag 'a'."
    ])
    expectWarnings(withFields({ title: " " }), [
      "Plugin 'weather' manifest field 'title' is empty; it prefixes every tool description."
    ])
    expectWarnings(withFields({ summary: "line one\nline two" }), [
      "Plugin 'weather' manifest field 'summary' spans several lines; the Tier-1 block shows it on one line."
    ])
    expectWarnings(withFields({ examples: [{ user: "", tool: "get_current_weather" }] }), [
      "Plugin 'weather' manifest field 'examples[0].user' is empty; an example teaches nothing without a user message."
    ])
  })

  it("soft violations never make a manifest invalid, even many at once", () => {
    const result = check(
      withFields({
        summary: "x".repeat(500),
        whenToUse: Array.from({ length: 20 }, () => "y".repeat(200)),
        tags: ["UPPER", "Mixed"]
      }),
      weatherTools
    )
    expect(result.valid).toBe(true)
    expect(result.warnings).toHaveLength(1 + 1 + 20 + 2)
  })
})

describe("validateManifest: never throws", () => {
  it("a getter that throws becomes an error naming the field", () => {
    const manifest = {
      ...weather,
      get summary(): string {
        throw new Error("boom")
      }
    }
    expectErrors(manifest, ["Plugin 'weather' manifest field 'summary' could not be read (boom)."])
  })

  it("a proxy whose traps all throw", () => {
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error("no get")
        },
        ownKeys: () => {
          throw new Error("no keys")
        },
        has: () => {
          throw new Error("no has")
        }
      }
    )
    const result = check(hostile, weatherTools)
    expect(result.valid).toBe(false)
    expect(result.errors).toContain("Plugin 'weather' manifest field 'title' could not be read (no get).")
    expect(result.errors).toContain("Plugin 'weather' manifest field '<root>' could not be read (no keys).")
  })

  it("a revoked proxy, and an error whose message getter throws", () => {
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    expect(check(proxy).valid).toBe(false)
    const evil = {
      ...weather,
      get title(): string {
        throw Object.defineProperty(new Error(), "message", {
          get: () => {
            throw new Error("again")
          }
        })
      }
    }
    expectErrors(evil, ["Plugin 'weather' manifest field 'title' could not be read (an unprintable value)."])
  })

  it("cyclic objects in args and in unknown fields", () => {
    const args: Record<string, unknown> = { city: "Berlin" }
    args.self = args
    const manifest: Record<string, unknown> = withFields({
      examples: [{ user: "u", tool: "get_current_weather", args }]
    })
    manifest.extra = manifest
    expectWarnings(manifest, ["Plugin 'weather' manifest has unknown field 'extra' (ignored)."])
  })

  it("huge strings are measured, not echoed in full", () => {
    const huge = "X".repeat(5_000_000)
    const result = check(withFields({ visibility: huge, tags: [huge] }))
    expect(result.errors).toHaveLength(1)
    expect(result.errors[0]?.length).toBeLessThan(300)
    expect(result.warnings[0]?.length).toBeLessThan(300)
  })

  it("a sparse array claiming a billion entries is capped with an error", () => {
    const whenToUse: string[] = ["ok"]
    whenToUse.length = 1_000_000_000
    const result = check(withFields({ whenToUse }))
    expect(result.valid).toBe(false)
    expect(result.errors[0]).toBe(
      "Plugin 'weather' manifest field 'whenToUse' has 1000000000 entries (at most 1000 are accepted; the rest were not checked)."
    )
    expect(result.warnings).toContain(
      "Plugin 'weather' manifest field 'whenToUse' has 1000000000 entries (recommended at most 8)."
    )
  })

  it("a plugin name that is not a string, and control characters in echoed values", () => {
    const result = validateManifest(null, 42 as unknown as string)
    expect(result.errors).toEqual(["Plugin '42' manifest must be an object (got null)."])
    expect(check(withFields({ category: "a\nb" })).errors[0]).toContain("'a\\u000ab'")
  })
})

describe("validateManifest: bounded output", () => {
  it("summarises unknown fields beyond 20 in one line", () => {
    const extra = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`x${i}`, i]))
    const result = check({ ...weather, ...extra }, weatherTools)
    expect(result.valid).toBe(true)
    expect(result.warnings).toHaveLength(21)
    expect(result.warnings[20]).toBe("Plugin 'weather' manifest has 5 more unknown fields (ignored).")
  })
})

describe("exampleToolNames", () => {
  it("lists the tool of every well-formed example and never throws", () => {
    expect(exampleToolNames(weather)).toEqual(["get_current_weather", "get_weather_forecast"])
    expect(exampleToolNames({ examples: [{ tool: "a" }, null, { tool: 3 }, "x", { tool: "b" }] })).toEqual([
      "a",
      "b"
    ])
    expect(exampleToolNames(null)).toEqual([])
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error("no")
        }
      }
    )
    expect(exampleToolNames(hostile)).toEqual([])
  })
})
