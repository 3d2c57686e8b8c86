/** Client-side tools: the schema check, the name rules, and where they are offered. */
import { Catalog, ClientTools, LoadedPlugins, MetaTools, Offer, type Plugin } from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const plugin = (
  name: string,
  tools: ReadonlyArray<string>,
  visibility: "always" | "on-demand" | "silent"
): Plugin => ({
  name,
  manifest: {
    title: `Title ${name}`,
    summary: `The ${name} plugin.`,
    whenToUse: [`When ${name} helps.`],
    visibility
  },
  tools: tools.map((t) => ({
    name: t,
    description: `Does ${t}.`,
    input: Schema.Struct({ q: Schema.String }),
    handler: () => "ok"
  }))
})

const catalog = Either.getOrThrow(
  Catalog.make([
    plugin("alpha", ["alpha_run"], "always"),
    plugin("beta", ["beta_run"], "on-demand"),
    plugin("hidden", ["hidden_run"], "silent")
  ])
)

const tool = (name: string, schema: unknown = { type: "object", properties: { x: { type: "string" } } }) => ({
  name,
  description: `The ${name} tool.`,
  schema
})

const refusal = (input: Parameters<typeof ClientTools.validate>[1]) => {
  const result = ClientTools.validate(catalog, input)
  if (Either.isRight(result)) throw new Error("expected a refusal")
  return result.left
}

describe("ClientTools.checkSchema", () => {
  it.each([
    [{ type: "object" }],
    [{ type: "object", properties: {} }],
    [
      {
        type: "object",
        properties: {
          a: { type: ["string", "null"] },
          b: { type: "array", items: { type: "object", properties: { c: { enum: [1, 2] } } } },
          d: { anyOf: [{ type: "string" }, { type: "number" }] }
        },
        required: ["a"],
        additionalProperties: false
      }
    ]
  ])("accepts %j", (schema) => {
    expect(ClientTools.checkSchema(schema)).toBeUndefined()
  })

  it.each([
    [undefined, /JSON Schema object/],
    [[], /JSON Schema object/],
    [{ type: "string" }, /type must be 'object'/],
    [{ properties: {} }, /type must be 'object'/],
    [{ type: "object", properties: [] }, /properties must be an object/],
    [{ type: "object", properties: { a: "string" } }, /properties\.a must be a JSON Schema object/],
    [{ type: "object", properties: { a: { type: "text" } } }, /properties\.a\.type must be one of/],
    [{ type: "object", required: "a" }, /required must be a list/],
    [
      { type: "object", properties: { a: { type: "array", items: 3 } } },
      /items must be a JSON Schema object/
    ],
    [{ type: "object", properties: { a: { enum: [] } } }, /enum must be a non-empty list/],
    [{ type: "object", properties: { a: { oneOf: "x" } } }, /oneOf must be a non-empty list/],
    [{ type: "object", additionalProperties: 3 }, /additionalProperties must be/]
  ])("refuses %j", (schema, message) => {
    expect(ClientTools.checkSchema(schema)).toMatch(message)
  })

  it("refuses a schema nested deeper than the bound instead of recursing without end", () => {
    let schema: Record<string, unknown> = { type: "object" }
    for (let i = 0; i < 100; i++) schema = { type: "object", properties: { n: schema } }
    expect(ClientTools.checkSchema(schema)).toMatch(/nests deeper/)
  })

  it("never throws on any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const r = ClientTools.checkSchema(value)
        expect(r === undefined || typeof r === "string").toBe(true)
      })
    )
  })
})

describe("ClientTools.validate", () => {
  it("accepts browser tools and actions, `parameters` as the schema's other name, in the given order", () => {
    const result = Either.getOrThrow(
      ClientTools.validate(catalog, {
        tools: [
          tool("pick_color"),
          { name: "scroll", description: "Scrolls.", parameters: { type: "object" } }
        ],
        agActions: [tool("open_panel")]
      })
    )
    expect(result.map((t) => [t.kind, t.name])).toEqual([
      ["browser", "pick_color"],
      ["browser", "scroll"],
      ["action", "open_panel"]
    ])
    expect(result[1]!.schema).toEqual({ type: "object" })
    expect(ClientTools.toDto(result[0]!)).toEqual(tool("pick_color"))
  })

  it.each([
    ["alpha_run", /plugin 'alpha'/],
    ["beta_run", /plugin 'beta'/],
    ["hidden_run", /plugin 'hidden'/],
    [MetaTools.LOAD_CAPABILITY, /meta-tool/],
    [MetaTools.LIST_CAPABILITIES, /meta-tool/]
  ])("refuses '%s' (a server tool's name, whatever its visibility)", (name, message) => {
    const error = refusal({ tools: [tool(name)] })
    expect(error).toMatchObject({ reason: "name-collision", tool: name })
    expect(error.message).toMatch(message)
  })

  it("refuses a duplicate across browser tools and actions, naming it", () => {
    expect(refusal({ tools: [tool("a")], agActions: [tool("a")] })).toMatchObject({
      reason: "duplicate-name",
      tool: "a"
    })
  })

  it("refuses bad names, missing descriptions, non-objects, and names the tool or its position", () => {
    expect(refusal({ tools: [tool("has space")] })).toMatchObject({
      reason: "invalid-name",
      tool: "has space"
    })
    expect(refusal({ tools: [tool("x".repeat(65))] })).toMatchObject({ reason: "invalid-name" })
    expect(refusal({ tools: [{ name: "a", schema: { type: "object" } }] })).toMatchObject({
      reason: "invalid-tool",
      tool: "a"
    })
    expect(refusal({ agActions: [tool("ok"), 7] })).toMatchObject({
      reason: "invalid-tool",
      tool: "agActions[1]"
    })
    expect(refusal({ tools: [tool("bad", { type: "object", properties: { q: 1 } })] })).toMatchObject({
      reason: "invalid-schema",
      tool: "bad"
    })
  })

  it("caps how many client tools one request may carry", () => {
    const many = Array.from({ length: ClientTools.MAX_CLIENT_TOOLS + 1 }, (_, i) => tool(`t${i}`))
    expect(refusal({ tools: many }).message).toMatch(/At most/)
  })

  it("client tools go after every server tool in the offer, so the offer's prefix is unchanged", () => {
    const loaded = LoadedPlugins.fromUnknown(["beta"])
    const server = Offer.offer(catalog, loaded)
    const client = Either.getOrThrow(ClientTools.validate(catalog, { tools: [tool("pick_color")] }))
    const withClient = Offer.offer(
      catalog,
      loaded,
      client.map((t) => t.offered)
    )
    expect(withClient.slice(0, server.length)).toEqual(server)
    expect(withClient.map((t) => t.name).slice(server.length)).toEqual(["pick_color"])
  })
})
