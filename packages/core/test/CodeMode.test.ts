/**
 * Code mode's rules (core `CodeMode`, docs/code-mode.md): the typed API rendered from the offered
 * tools' schemas, what a program may call and how each call is gated (`ToolCall.planProgramCall`),
 * the program's input, and what the model is told of a result or a failure.
 */
import * as NodeModule from "node:module"
import { Catalog, CodeMode, CodeSandbox, LoadedPlugins, Offer, type Plugin, ToolCall } from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const weather: Plugin = {
  name: "weather",
  manifest: {
    title: "Weather",
    summary: "Current weather for a city.",
    whenToUse: ["When the user asks about the weather."],
    visibility: "on-demand"
  },
  tools: [
    {
      name: "get_current_weather",
      description: "Current weather for a city. Use it for today.",
      input: Schema.Struct({
        city: Schema.String,
        units: Schema.optional(Schema.Literal("metric", "imperial"))
      }),
      handler: ({ city }) => ({ city, tempC: 20 })
    }
  ]
}

const currency: Plugin = {
  name: "currency-rates",
  manifest: {
    title: "Currency rates",
    summary: "Exchange rates.",
    whenToUse: ["When the user converts money."],
    visibility: "on-demand"
  },
  tools: [
    {
      name: "convert",
      description: "Convert an amount.",
      input: Schema.Struct({ amount: Schema.Number, from: Schema.String, to: Schema.String }),
      handler: () => 1
    }
  ]
}

const catalog = Catalog.unsafeMake([weather, currency])
const loaded = LoadedPlugins.fromUnknown(["weather"])
const offered = Offer.offer(catalog, loaded)
const step: ToolCall.Step = { catalog, offered, loaded }

describe("CodeMode: the offer", () => {
  it("offers run_code last, over the offered tools only, never the meta-tools", () => {
    const tools = CodeMode.callables(offered)
    expect(tools.map((t) => `${t.ref.namespace}.${t.ref.name}`)).toEqual(["weather.get_current_weather"])
    const [runCode] = CodeMode.offer("on", offered)
    expect(runCode?.name).toBe(CodeMode.RUN_CODE)
    expect(runCode?.description).toContain(
      'get_current_weather(input: { city: string; units?: "metric" | "imperial" }): Promise<unknown>'
    )
    // Signatures only: the tool's description is its own, offered beside run_code.
    expect(runCode?.description).not.toContain("Current weather for a city")
    expect(offered.find((t) => t.name === "get_current_weather")?.description).toContain(
      "Current weather for a city"
    )
    // convert's plugin is not loaded: the API does not show it.
    expect(runCode?.description).not.toContain("convert")
    expect(CodeMode.offer("off", offered)).toEqual([])
  })

  it("offers nothing when no tool can be called (only meta-tools are offered)", () => {
    const bare = Offer.offer(catalog, LoadedPlugins.empty)
    expect(CodeMode.offer("on", bare)).toEqual([])
  })

  it("follows a local $ref, and ends a cycle of them as unknown", () => {
    const tool = (parameters: Record<string, unknown>) => ({
      ref: { namespace: "p", name: "t" },
      tool: { name: "t", description: "T.", parameters, kind: "plugin" as const, plugin: "p" }
    })
    const defs = { Int: { type: "integer" }, Loop: { $ref: "#/$defs/Loop" } }
    expect(
      CodeMode.api([
        tool({
          $defs: defs,
          type: "object",
          properties: {
            days: { $ref: "#/$defs/Int" },
            loop: { $ref: "#/$defs/Loop" },
            far: { $ref: "x.json" }
          },
          required: ["days"]
        })
      ])
    ).toContain("t(input: { days: number; loop?: unknown; far?: unknown }): Promise<unknown>")
  })

  it("names a namespace after its plugin, as an identifier", () => {
    const all = Offer.offer(catalog, LoadedPlugins.fromUnknown(["weather", "currency-rates"]))
    expect(CodeMode.api(CodeMode.callables(all))).toContain("  currency_rates: {\n")
  })

  // Node's TypeScript parser (22.13+); core's tests also run on Node 20.19, which has none.
  const stripTypeScriptTypes = (NodeModule as { stripTypeScriptTypes?: (code: string) => string })
    .stripTypeScriptTypes
  it.skipIf(stripTypeScriptTypes === undefined)(
    "renders valid TypeScript for any tool schema (property)",
    () => {
      const leaf = fc.oneof(
        fc.constant({ type: "string" }),
        fc.constant({ type: "integer" }),
        fc.constant({ type: ["string", "null"] }),
        fc.record({ enum: fc.array(fc.oneof(fc.string(), fc.integer(), fc.boolean()), { minLength: 1 }) }),
        fc.record({ const: fc.string() }),
        fc.constant({}),
        fc.constant({ $ref: "#/definitions/x" })
      )
      const schema = fc.letrec((tie) => ({
        node: fc.oneof(
          { depthSize: "small" },
          leaf,
          fc.record({ type: fc.constant("array"), items: tie("node") }),
          fc.record({ anyOf: fc.array(tie("node"), { minLength: 1, maxLength: 3 }) }),
          fc.record({
            type: fc.constant("object"),
            properties: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), tie("node"), { maxKeys: 4 }),
            required: fc.array(fc.string({ maxLength: 8 }), { maxLength: 2 })
          })
        )
      })).node
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.stringMatching(/^[a-z][a-z0-9_-]{0,12}$/), schema), {
            minLength: 1,
            maxLength: 4
          }),
          fc.string({ maxLength: 200 }),
          (tools, description) => {
            const api = CodeMode.api(
              tools.map(([name, parameters], i) => ({
                ref: { namespace: "p", name: `${name}${i}` },
                tool: { name: `${name}${i}`, description, parameters, kind: "plugin", plugin: "p" }
              }))
            )
            expect(() => stripTypeScriptTypes!(api)).not.toThrow()
          }
        ),
        { numRuns: 200 }
      )
    }
  )
})

describe("CodeMode: a program's calls go through the gate", () => {
  it("runs an offered tool", () => {
    const decided = ToolCall.planProgramCall(
      step,
      { namespace: "weather", name: "get_current_weather" },
      { city: "Rome" }
    )
    expect(decided._tag).toBe("Run")
  })

  it("refuses a tool of a plugin that is not loaded, with core's message", () => {
    const decided = ToolCall.planProgramCall(step, { namespace: "currency_rates", name: "convert" }, {})
    const direct = ToolCall.plan(step, { name: "convert", args: {} })
    expect(decided).toEqual(direct)
    expect(decided._tag === "Answer" && decided.answer.content).toContain("load_capability")
  })

  it("refuses every meta-tool, run_code included", () => {
    for (const name of ["list_capabilities", "load_capability", "read_result", "call_tool", "run_code"]) {
      const decided = ToolCall.planProgramCall(step, { namespace: "weather", name }, { names: ["x"] })
      expect(decided._tag).toBe("Answer")
      if (decided._tag === "Answer") expect(decided.answer.outcome).toBe("refused")
    }
  })

  it("writes the path to a tool as a program would, quoting what is not an identifier", () => {
    expect(CodeMode.pathOf({ namespace: "weather", name: "get_current_weather" })).toBe(
      "tools.weather.get_current_weather"
    )
    expect(CodeMode.pathOf({ namespace: "p", name: "my-tool" })).toBe('tools.p["my-tool"]')
  })

  it("tells a program that reached an offered tool under another namespace where it is", () => {
    const decided = ToolCall.planProgramCall(step, { namespace: "meteo", name: "get_current_weather" }, {})
    expect(decided._tag === "Answer" && decided.answer.content).toBe(
      "tools.meteo has no get_current_weather; it is tools.weather.get_current_weather."
    )
  })

  it("plans a run_code call as a program only when it is well formed", () => {
    const withCode: ToolCall.Step = { ...step, offered: [...offered, ...CodeMode.offer("on", offered)] }
    expect(ToolCall.plan(withCode, { name: "run_code", args: { code: "return 1" } })).toMatchObject({
      _tag: "Program",
      code: "return 1"
    })
    for (const args of [undefined, "return 1", { code: 1 }, { code: "  " }, { code: "x".repeat(20_001) }]) {
      const decided = ToolCall.plan(withCode, { name: "run_code", args })
      expect(decided._tag).toBe("Answer")
    }
    // Not offered (code mode off): the gate refuses it as an unknown tool.
    expect(ToolCall.plan(step, { name: "run_code", args: { code: "return 1" } })._tag).toBe("Answer")
  })
})

describe("CodeMode: what a program finds under tools", () => {
  it("the offered tools, then every other tool the user may load; never a silent or hidden one", () => {
    const secret: Plugin = {
      name: "secret",
      manifest: { title: "Secret", summary: "Hidden.", whenToUse: ["never"], visibility: "silent" },
      tools: [{ name: "leak", description: "Leaks.", input: Schema.Struct({}), handler: () => "x" }]
    }
    const gated: Plugin = {
      name: "gated",
      manifest: { title: "Gated", summary: "Needs a grant.", whenToUse: ["admin"] },
      requires: [{ with: "oracle:admin", can: "admin/purge" }],
      tools: [{ name: "purge", description: "Purges.", input: Schema.Struct({}), handler: () => "x" }]
    }
    const all = Catalog.unsafeMake([weather, currency, secret, gated])
    const names = (refs: ReadonlyArray<CodeSandbox.ToolRef>) => refs.map((r) => `${r.namespace}.${r.name}`)
    const offer = Offer.offer(all, loaded)
    expect(names(CodeMode.reachable(all, offer))).toEqual([
      "weather.get_current_weather",
      "currency_rates.convert"
    ])
  })
})

describe("CodeMode: what the model reads", () => {
  it("passes a tool's JSON answer to the program as a value, anything else as text", () => {
    expect(CodeMode.callValue('{"tempC": 20}')).toEqual({ tempC: 20 })
    expect(CodeMode.callValue("[1,2]")).toEqual([1, 2])
    expect(CodeMode.callValue("12.5")).toBe(12.5)
    expect(CodeMode.callValue("Sunny, 20°C")).toBe("Sunny, 20°C")
    expect(CodeMode.callValue("{not json")).toBe("{not json")
  })

  it("answers with the logs, then the result as JSON", () => {
    expect(CodeMode.resultText({ value: { warmest: "Rome" }, logs: [], toolCalls: 3 })).toBe(
      '{"warmest":"Rome"}'
    )
    expect(CodeMode.resultText({ value: undefined, logs: ["a", "b"], toolCalls: 0 })).toBe(
      "Logs:\na\nb\n\nResult:\nThe program returned nothing."
    )
  })

  it("says which bound stopped a program, with its value", () => {
    const bounds = CodeMode.DEFAULT_BOUNDS
    const told = (reason: CodeSandbox.SandboxReason) =>
      CodeMode.failure(new CodeSandbox.CodeSandboxError({ reason, message: "detail" }), bounds)
    expect(told("cpu-time")).toContain("2,000 ms (the CPU bound)")
    expect(told("memory")).toContain("33,554,432 bytes")
    expect(told("output")).toContain("20,000 characters")
    expect(told("tool-calls")).toContain("25 tool calls")
    expect(told("wall-clock")).toContain("60,000 ms")
    expect(told("thrown")).toBe("The program failed: detail")
    expect(told("syntax")).toContain("does not parse: detail")
    expect(told("aborted")).toContain("aborted")
  })

  it("decodes a program, refusing what is not one with a usage line", () => {
    expect(CodeMode.decodeInput({ code: "return 1" })).toEqual(Either.right("return 1"))
    expect(Either.getLeft(CodeMode.decodeInput(null))).toEqual(
      expect.objectContaining({ value: expect.stringContaining('Call run_code with {"code"') })
    )
  })
})
