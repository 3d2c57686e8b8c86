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

const subAgent = (name: string) => ({ name, description: `The ${name} agent.`, run: () => "ok" })

const catalog = Either.getOrThrow(
  Catalog.make([
    plugin("alpha", ["alpha_run"], "always"),
    plugin("beta", ["beta_run"], "on-demand"),
    plugin("hidden", ["hidden_run"], "silent"),
    { ...plugin("helpers", [], "on-demand"), getSubAgents: () => [subAgent("summarizer")] },
    { ...plugin("quiet", [], "silent"), getSubAgents: () => [subAgent("whisperer")] }
  ])
)

const tool = (name: string, schema: unknown = { type: "object", properties: { x: { type: "string" } } }) => ({
  name,
  description: `The ${name} tool.`,
  schema
})

/** A checker that accepts everything and records what it was given. */
const recording = () => {
  const seen: Array<unknown> = []
  const check: ClientTools.SchemaChecker = (schema) => {
    seen.push(schema)
    return undefined
  }
  return { seen, check }
}

const accepting: ClientTools.ValidateOptions = { checkSchema: () => undefined }

const refusal = (
  input: Parameters<typeof ClientTools.validate>[1],
  options: ClientTools.ValidateOptions = accepting
) => {
  const result = ClientTools.validate(catalog, input, options)
  if (Either.isRight(result)) throw new Error("expected a refusal")
  return result.left
}

const nested = (depth: number): Record<string, unknown> => {
  let schema: Record<string, unknown> = { type: "object" }
  for (let i = 1; i < depth; i++) schema = { type: "object", not: schema }
  return schema
}

describe("ClientTools.checkShape", () => {
  it.each([[{ type: "object" }], [{ type: "object", properties: { a: { minLength: "any value" } } }]])(
    "accepts %j (JSON Schema validity is the injected checker's)",
    (schema) => {
      expect(ClientTools.checkShape(schema)).toBeUndefined()
    }
  )

  it.each([
    [undefined, /JSON Schema object/],
    [[], /JSON Schema object/],
    ["{}", /JSON Schema object/],
    [{ type: "string" }, /type must be 'object'/],
    [{ properties: {} }, /type must be 'object'/]
  ])("refuses %j", (schema, message) => {
    expect(ClientTools.checkShape(schema)).toMatch(message)
  })

  it("bounds depth: the deepest accepted schema is MAX_SCHEMA_DEPTH objects deep", () => {
    expect(ClientTools.checkShape(nested(ClientTools.MAX_SCHEMA_DEPTH))).toBeUndefined()
    expect(ClientTools.checkShape(nested(ClientTools.MAX_SCHEMA_DEPTH + 1))).toMatch(/nests deeper than 32/)
  })

  it("bounds a very deep input without recursing (no stack overflow)", () => {
    let deep: unknown = {}
    for (let i = 0; i < 200_000; i++) deep = [deep]
    expect(ClientTools.checkShape({ type: "object", enum: deep })).toMatch(/nests deeper/)
  })

  it("bounds size: at most MAX_SCHEMA_NODES JSON values, counting every object, array and scalar", () => {
    // The root, its `type` and `enum` values, then the enum's members.
    const withMembers = (n: number) => ({ type: "object", enum: Array.from({ length: n }, (_, i) => i) })
    expect(ClientTools.checkShape(withMembers(ClientTools.MAX_SCHEMA_NODES - 3))).toBeUndefined()
    expect(ClientTools.checkShape(withMembers(ClientTools.MAX_SCHEMA_NODES - 2))).toMatch(
      /more than 2000 values/
    )
    expect(ClientTools.checkShape(withMembers(1_000_000))).toMatch(/more than 2000 values/)
  })

  it("never throws on any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const r = ClientTools.checkShape(value)
        expect(r === undefined || typeof r === "string").toBe(true)
      })
    )
  })
})

describe("ClientTools.validate", () => {
  it("accepts browser tools and actions, `parameters` as the schema's other name, in the given order", () => {
    const result = Either.getOrThrow(
      ClientTools.validate(
        catalog,
        {
          tools: [
            tool("pick_color"),
            { name: "scroll", description: "Scrolls.", parameters: { type: "object" } }
          ],
          agActions: [tool("open_panel")]
        },
        accepting
      )
    )
    expect(result.map((t) => [t.kind, t.name])).toEqual([
      ["browser", "pick_color"],
      ["browser", "scroll"],
      ["action", "open_panel"]
    ])
    expect(result[1]!.parameters).toEqual({ type: "object" })
    expect(ClientTools.toDto(result[0]!)).toEqual(tool("pick_color"))
  })

  it.each([
    ["alpha_run", /plugin 'alpha'/],
    ["beta_run", /plugin 'beta'/],
    ["hidden_run", /a tool of plugin 'hidden'/],
    ["summarizer", /a sub-agent of plugin 'helpers'/],
    ["whisperer", /a sub-agent of plugin 'quiet'/],
    [MetaTools.LOAD_CAPABILITY, /meta-tool/],
    [MetaTools.LIST_CAPABILITIES, /meta-tool/]
  ])("refuses '%s' (a server tool's name, whatever its visibility)", (name, message) => {
    const error = refusal({ tools: [tool(name)] })
    expect(error).toMatchObject({ reason: "name-collision", tool: name })
    expect(error.message).toMatch(message)
    // As an action too: one name space.
    expect(refusal({ agActions: [tool(name)] }).message).toMatch(/^Client action/)
  })

  it("refuses the names of this request's own tools and sub-agents, naming their plugin", () => {
    const requestTools: ReadonlyArray<ClientTools.ReservedTool> = [
      { plugin: "alpha", offered: { name: "alpha_today" }, kind: "request-tool" },
      { plugin: "hidden", offered: { name: "hidden_helper" }, kind: "sub-agent" },
      { plugin: "beta", offered: { name: "beta_untyped" } }
    ]
    const options = { ...accepting, requestTools }
    expect(refusal({ tools: [tool("alpha_today")] }, options).message).toBe(
      "Client tool 'alpha_today' has the name of a per-request tool of plugin 'alpha'; rename it."
    )
    expect(refusal({ agActions: [tool("hidden_helper")] }, options).message).toBe(
      "Client action 'hidden_helper' has the name of a sub-agent of plugin 'hidden'; rename it."
    )
    expect(refusal({ tools: [tool("beta_untyped")] }, options)).toMatchObject({ reason: "name-collision" })
    // Without them, the same names are free: they exist for that request only.
    expect(Either.isRight(ClientTools.validate(catalog, { tools: [tool("alpha_today")] }, accepting))).toBe(
      true
    )
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
    expect(refusal({ tools: [tool("bad", { type: "array" })] })).toMatchObject({
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
    const client = Either.getOrThrow(
      ClientTools.validate(catalog, { tools: [tool("pick_color")] }, accepting)
    )
    const withClient = Offer.offer(
      catalog,
      loaded,
      client.map((t) => t.offered)
    )
    expect(withClient.slice(0, server.length)).toEqual(server)
    expect(withClient.map((t) => t.name).slice(server.length)).toEqual(["pick_color"])
  })
})

describe("ClientTools.validate: the injected schema check", () => {
  it("gives the checker each tool's schema (`schema` or `parameters`), once, in order", () => {
    const { seen, check } = recording()
    const a = { type: "object", properties: { a: {} } }
    const b = { type: "object", properties: { b: {} } }
    Either.getOrThrow(
      ClientTools.validate(
        catalog,
        { tools: [tool("a", a)], agActions: [{ name: "b", description: "B.", parameters: b }] },
        { checkSchema: check }
      )
    )
    expect(seen).toEqual([a, b])
  })

  it("refuses with the checker's words, naming the tool", () => {
    const error = refusal(
      { tools: [tool("ok"), tool("bad", { type: "object", not: 5 })] },
      { checkSchema: (schema) => ("not" in schema ? "/not must be object,boolean" : undefined) }
    )
    expect(error).toMatchObject({ reason: "invalid-schema", tool: "bad" })
    expect(error.message).toBe("Client tool 'bad' has an invalid JSON Schema: /not must be object,boolean.")
  })

  it("a checker that throws refuses the tool instead of failing the request", () => {
    const error = refusal(
      { agActions: [tool("boom")] },
      {
        checkSchema: () => {
          throw new Error("compiler crashed")
        }
      }
    )
    expect(error).toMatchObject({ reason: "invalid-schema", tool: "boom" })
    expect(error.message).toMatch(/could not be checked \(compiler crashed\)/)
  })

  it("no schema is checked while any tool fails a cheap check (name, shape, clash)", () => {
    for (const bad of [tool("alpha_run"), tool("has space"), tool("x", { type: "string" }), tool("ok")]) {
      const { seen, check } = recording()
      const result = ClientTools.validate(catalog, { tools: [tool("ok"), bad] }, { checkSchema: check })
      expect(Either.isLeft(result)).toBe(true)
      expect(seen).toEqual([])
    }
  })

  it("the checker never sees a schema outside the bounds", () => {
    const { seen, check } = recording()
    const error = refusal(
      { tools: [tool("deep", nested(ClientTools.MAX_SCHEMA_DEPTH + 1))] },
      { checkSchema: check }
    )
    expect(error).toMatchObject({ reason: "invalid-schema", tool: "deep" })
    expect(seen).toEqual([])
  })

  it("bounds the schemas of one request together", () => {
    const big = {
      type: "object",
      enum: Array.from({ length: ClientTools.MAX_SCHEMA_NODES - 3 }, (_, i) => i)
    }
    const fit = Math.floor(ClientTools.MAX_REQUEST_SCHEMA_NODES / ClientTools.MAX_SCHEMA_NODES)
    const tools = (n: number) => Array.from({ length: n }, (_, i) => tool(`big${i}`, big))
    expect(Either.isRight(ClientTools.validate(catalog, { tools: tools(fit) }, accepting))).toBe(true)
    const error = refusal({ tools: tools(fit + 1) })
    expect(error).toMatchObject({ reason: "invalid-schema", tool: `big${fit}` })
    expect(error.message).toMatch(/at most 8000 values together/)
  })
})
