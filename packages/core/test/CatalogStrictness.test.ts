import { Catalog, CatalogSource, definePlugin, defineTool, type Plugin, ToolOutput } from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { argsProblems } from "../src/internal/exampleArgs.js"

const manifest = {
  title: "Currency Converter",
  summary: "Converts amounts between currencies.",
  whenToUse: ["The user asks to convert money."]
}

const ConvertInput = Schema.Struct({
  amount: Schema.Number,
  from: Schema.String,
  to: Schema.String,
  rounding: Schema.optional(Schema.Literal("up", "down"))
})

const convert = defineTool({
  name: "convert_currency",
  description: "Converts an amount.",
  input: ConvertInput,
  handler: ({ amount }) => amount
})

const withExamples = (
  examples: ReadonlyArray<{ tool: string; args?: Record<string, unknown> }>,
  tools: Plugin["tools"] = [convert]
): Plugin => ({
  name: "currency-converter",
  manifest: { ...manifest, examples: examples.map((e) => ({ user: "Convert money.", ...e })) },
  tools
})

const bootErrors = (plugins: ReadonlyArray<unknown>): ReadonlyArray<string> => {
  const result = Catalog.make(plugins as ReadonlyArray<Plugin>)
  return Either.isLeft(result) ? result.left.errors : []
}

const bootWarnings = (plugins: ReadonlyArray<Plugin>): ReadonlyArray<string> => {
  const result = Catalog.make(plugins)
  if (Either.isLeft(result)) throw new Error(result.left.message)
  return result.right.warnings
}

describe("Catalog.make: unknown keys", () => {
  it("a manifest field at the plugin's top level is a boot error saying where it belongs", () => {
    const plugin = { name: "weather", manifest, visibility: "always", tools: [convert] }
    expect(bootErrors([plugin])).toEqual([
      "Plugin 'weather' has an unknown key 'visibility' (it belongs in 'manifest')."
    ])
  })

  it("any other unknown plugin key is a boot error naming it", () => {
    expect(bootErrors([{ name: "weather", manifest, tool: [convert] }])).toEqual([
      "Plugin 'weather' has an unknown key 'tool'."
    ])
  })

  it("a manifest field on a tool is a boot error pointing at the plugin's manifest", () => {
    const tool = { ...convert, summary: "Converts." }
    expect(bootErrors([{ name: "weather", manifest, tools: [tool] }])).toEqual([
      "Plugin 'weather' tool 'convert_currency' has an unknown key 'summary' (it belongs in the plugin's 'manifest')."
    ])
  })

  it("any other unknown tool key is a boot error; per-request tools obey the same rule", () => {
    const tool = { ...convert, inputSchema: {} }
    expect(bootErrors([{ name: "weather", manifest, tools: [tool] }])).toEqual([
      "Plugin 'weather' tool 'convert_currency' has an unknown key 'inputSchema'."
    ])
    const base = Catalog.make([{ name: "weather", manifest, getRequestTools: () => [] }])
    if (Either.isLeft(base)) throw new Error(base.left.message)
    const resolved = Catalog.resolveRequestTool(base.right, "weather", tool as never)
    expect(Either.isLeft(resolved) ? resolved.left.errors : resolved).toContain(
      "Plugin 'weather' per-request tool 'convert_currency' has an unknown key 'inputSchema'."
    )
  })

  it("names the first 20 unknown keys of a huge object and counts the rest", () => {
    const extra = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`k${i}`, i]))
    const errors = bootErrors([{ name: "weather", manifest, ...extra }])
    expect(errors).toHaveLength(21)
    expect(errors[20]).toBe("Plugin 'weather' has 5 more unknown keys.")
  })

  it("plugins derived from MCP servers boot clean", () => {
    const derived = CatalogSource.toPlugins([
      {
        name: "everything",
        source: { kind: "mcp", server: "everything" },
        manifest,
        tools: [
          {
            name: "echo",
            description: "Echoes.",
            inputSchema: { type: "object", properties: { text: { type: "string" } } },
            call: (args) => ToolOutput.text(JSON.stringify(args))
          }
        ],
        operatingGuide: "Echo things.",
        laterTools: () => []
      }
    ])
    expect(derived.errors).toEqual([])
    expect(bootWarnings(derived.plugins)).toEqual([])
  })

  it("definePlugin rejects an unknown key in the types", () => {
    const typed = () =>
      definePlugin({
        name: "weather",
        manifest,
        // @ts-expect-error a manifest field at the top level is not a key of Plugin
        visibility: "always"
      })
    expect(bootErrors([typed()])).toHaveLength(1)
    const tool = () =>
      defineTool({
        name: "t",
        description: "d",
        input: ConvertInput,
        // @ts-expect-error not a key of PluginTool
        title: "T",
        // the handler's input is still inferred from `input`
        handler: ({ amount }) => amount.toFixed(2)
      })
    expect(bootErrors([{ name: "weather", manifest, tools: [tool()] }])).toEqual([
      "Plugin 'weather' tool 't' has an unknown key 'title' (it belongs in the plugin's 'manifest')."
    ])
  })
})

describe("Catalog.make: example args against the tool's input", () => {
  const prefix = "Plugin 'currency-converter' manifest examples[1] (convert_currency): "

  it("a field of the wrong type", () => {
    const plugin = withExamples([
      { tool: "convert_currency", args: { amount: 1, from: "EUR", to: "USD" } },
      { tool: "convert_currency", args: { amount: "250", from: "EUR", to: "USD" } }
    ])
    expect(bootWarnings([plugin])).toEqual([
      `[boot-warning] ${prefix}args field 'amount' does not fit the tool's input: expected a number, got "250".`
    ])
  })

  it("a missing required field, an unknown field and a literal out of range, each named", () => {
    const plugin = withExamples([
      { tool: "convert_currency", args: { amount: 1, from: "EUR", to: "USD" } },
      { tool: "convert_currency", args: { amount: 1, from: "EUR", too: "USD", rounding: "half" } }
    ])
    expect(bootWarnings([plugin])).toEqual([
      `[boot-warning] ${prefix}args is missing required field 'to'.`,
      `[boot-warning] ${prefix}args has unknown field 'too'.`,
      `[boot-warning] ${prefix}args field 'rounding' does not fit the tool's input: expected one of "up", "down", got "half".`
    ])
  })

  it("a refinement is worded by the schema; an example without args shows no call and is not checked", () => {
    const Positive = Schema.Struct({ amount: Schema.Number.pipe(Schema.positive()) })
    const tool = defineTool({ name: "convert_currency", description: "d", input: Positive, handler: () => 1 })
    const plugin = withExamples(
      [
        { tool: "convert_currency", args: { amount: 2 } },
        { tool: "convert_currency", args: { amount: -2 } }
      ],
      [tool]
    )
    expect(bootWarnings([plugin])).toEqual([
      `[boot-warning] ${prefix}args field 'amount' does not fit the tool's input: Expected a positive number, actual -2.`
    ])
    expect(bootWarnings([withExamples([{ tool: "convert_currency" }], [tool])])).toEqual([])
    expect(bootWarnings([withExamples([{ tool: "convert_currency", args: {} }], [tool])])).toEqual([
      "[boot-warning] Plugin 'currency-converter' manifest examples[0] (convert_currency): args is missing required field 'amount'."
    ])
  })

  it("a tool offered with a JSON Schema (an MCP tool) is checked on its top-level fields", () => {
    const tool = {
      name: "convert_currency",
      description: "d",
      input: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
      jsonSchema: {
        type: "object",
        properties: { amount: { type: "number" }, to: { type: "string" } },
        required: ["amount", "to"],
        additionalProperties: false
      },
      handler: () => 1
    }
    const plugin = withExamples(
      [
        { tool: "convert_currency", args: { amount: 1, to: "USD" } },
        { tool: "convert_currency", args: { amount: "250", from: "EUR" } }
      ],
      [tool]
    )
    expect(bootWarnings([plugin])).toEqual([
      `[boot-warning] ${prefix}args is missing required field 'to'.`,
      `[boot-warning] ${prefix}args has unknown field 'from'.`,
      `[boot-warning] ${prefix}args field 'amount' does not fit the tool's input: expected a number, got "250".`
    ])
  })

  it("a sub-agent's example is checked against its task argument", () => {
    const plugin: Plugin = {
      name: "helper",
      manifest: { ...manifest, examples: [{ user: "Help.", tool: "ask", args: { question: "x" } }] },
      getSubAgents: () => [{ name: "ask", description: "Asks.", run: () => "ok" }]
    }
    expect(bootWarnings([plugin])).toEqual([
      "[boot-warning] Plugin 'helper' manifest examples[0] (ask): args is missing required field 'task'.",
      "[boot-warning] Plugin 'helper' manifest examples[0] (ask): args has unknown field 'question'."
    ])
  })

  const field = fc.constantFrom("amount", "from", "to")
  // Every value `ConvertInput` accepts, in the shape it declares.
  const valid = fc.record(
    {
      amount: fc.double({ noNaN: true }),
      from: fc.string(),
      to: fc.string(),
      rounding: fc.constantFrom("up" as const, "down" as const)
    },
    { requiredKeys: ["amount", "from", "to"] }
  )

  it("property: args the tool's own schema generates never warn", () => {
    fc.assert(
      fc.property(fc.array(valid, { minLength: 1, maxLength: 4 }), (argsList) => {
        const plugin = withExamples(argsList.map((args) => ({ tool: "convert_currency", args })))
        expect(bootWarnings([plugin])).toEqual([])
      })
    )
  })

  it("property: a field given a value of another type warns once, naming that field", () => {
    fc.assert(
      fc.property(
        valid,
        field,
        fc.oneof(fc.boolean(), fc.constant(null), fc.array(fc.integer())),
        (args, f, bad) => {
          const plugin = withExamples([{ tool: "convert_currency", args: { ...args, [f]: bad } }])
          const warnings = bootWarnings([plugin])
          expect(warnings).toHaveLength(1)
          expect(warnings[0]).toContain(`args field '${f}' does not fit the tool's input: expected a `)
        }
      )
    )
  })

  it("property: args warn exactly when the tool's own decode (extra keys refused) rejects them", () => {
    // Plain structs take the quick path, refined and transformed ones the decode: both must agree.
    const inputs = [
      ConvertInput,
      Schema.Struct({ n: Schema.Number.pipe(Schema.positive()), tag: Schema.optional(Schema.String) }),
      Schema.Struct({ n: Schema.NumberFromString, flag: Schema.Boolean }),
      Schema.Struct({ n: Schema.Union(Schema.Number, Schema.Null), kind: Schema.Literal("a", "b") })
    ]
    const catalog = Catalog.make([
      {
        name: "shapes",
        manifest,
        tools: inputs.map((input, i) => ({ name: `shape_${i}`, description: "d", input, handler: () => 1 }))
      }
    ])
    if (Either.isLeft(catalog)) throw new Error(catalog.left.message)
    const tools = catalog.right.entries[0]?.tools ?? []
    const value = fc.oneof(
      fc.double(),
      fc.string(),
      fc.boolean(),
      fc.constant(null),
      fc.constantFrom("a", "b", "up", "down", "12")
    )
    // Args each input accepts, then at most one change: a key dropped, added or given any value.
    const validFor = [
      valid,
      fc.record({ n: fc.double({ min: 1, max: 1e6 }), tag: fc.string() }, { requiredKeys: ["n"] }),
      fc.record({ n: fc.integer().map(String), flag: fc.boolean() }),
      fc.record({ n: fc.oneof(fc.double(), fc.constant(null)), kind: fc.constantFrom("a", "b") })
    ]
    const key = fc.constantFrom("amount", "from", "to", "rounding", "n", "tag", "flag", "kind", "other")
    const change = fc.oneof(
      fc.constant(undefined),
      fc.record({ drop: key }),
      fc.record({ set: key, to: value })
    )
    const args = fc
      .nat(inputs.length - 1)
      .chain((i) => fc.tuple(fc.constant(i), validFor[i] as fc.Arbitrary<Record<string, unknown>>, change))
    let accepted = 0
    let rejected = 0
    fc.assert(
      fc.property(args, ([i, base, edit]) => {
        const a: Record<string, unknown> = { ...base }
        if (edit !== undefined && "drop" in edit) delete a[edit.drop]
        if (edit !== undefined && "set" in edit) a[edit.set] = edit.to
        const tool = tools[i]
        const input = inputs[i]
        if (tool === undefined || input === undefined) throw new Error("no tool")
        const ok = Either.isRight(
          Schema.decodeUnknownEither(input as Schema.Schema<unknown, unknown, never>, {
            onExcessProperty: "error"
          })(a)
        )
        if (ok) accepted++
        else rejected++
        expect(argsProblems(tool, a).length === 0).toBe(ok)
      }),
      { numRuns: 500 }
    )
    // Both answers were exercised, not only one.
    expect(accepted).toBeGreaterThan(50)
    expect(rejected).toBeGreaterThan(50)
  })
})
