/**
 * Issue 36, item 14: a TypeScript tool's input obeys the rule MCP and client tools obey (an
 * object schema), and an input with no JSON Schema form is an error naming the field.
 */
import { Catalog, ClientTools, type Plugin, type PluginTool } from "@plugboard/core"
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"

const notes = (tools: ReadonlyArray<PluginTool>): Plugin => ({
  name: "notes",
  manifest: { title: "Notes", summary: "Notes of the user.", whenToUse: ["The user keeps notes."] },
  tools
})

const tool = (name: string, input: unknown, extra: Partial<PluginTool> = {}): PluginTool => ({
  name,
  description: `Does ${name}.`,
  input: input as PluginTool["input"],
  handler: () => "ok",
  ...extra
})

const bootErrors = (plugins: ReadonlyArray<Plugin>): ReadonlyArray<string> => {
  const made = Catalog.make(plugins)
  return Either.isLeft(made) ? made.left.errors : []
}

describe("a tool's input", () => {
  it("issue 36 item 14: a non-object input is a boot error naming the plugin and the tool, by the rule client and MCP tools obey", () => {
    const errors = bootErrors([
      notes([
        tool("add_note", Schema.String),
        tool("tag_notes", Schema.Array(Schema.String)),
        tool(
          "either",
          Schema.Union(Schema.Struct({ a: Schema.String }), Schema.Struct({ b: Schema.Number }))
        ),
        tool("raw", Schema.Struct({}), { jsonSchema: { type: "string" } })
      ])
    ])
    const rule = ClientTools.checkShape({ type: "string" })
    expect(rule).toBe("the schema's type must be 'object' (the arguments are an object)")
    expect(errors).toEqual([
      `Plugin 'notes' tool 'add_note' input is not an object schema: ${rule}, and its JSON Schema has type 'string'; use Schema.Struct({ ... }) (one field per argument; a union of shapes becomes one struct with optional fields).`,
      `Plugin 'notes' tool 'tag_notes' input is not an object schema: ${rule}, and its JSON Schema has type 'array'; use Schema.Struct({ ... }) (one field per argument; a union of shapes becomes one struct with optional fields).`,
      `Plugin 'notes' tool 'either' input is not an object schema: ${rule}, and its JSON Schema has a union (anyOf); use Schema.Struct({ ... }) (one field per argument; a union of shapes becomes one struct with optional fields).`,
      `Plugin 'notes' tool 'raw' jsonSchema is not an object schema: ${rule}, and it has type 'string'.`
    ])
  })

  it("issue 36 item 14: an input with no JSON Schema form (DateFromSelf) names the plugin, the tool, the field path and what to use instead", () => {
    const errors = bootErrors([
      notes([
        tool("remind", Schema.Struct({ text: Schema.String, when: Schema.DateFromSelf })),
        tool(
          "plan",
          Schema.Struct({
            "the steps": Schema.Array(Schema.Struct({ at: Schema.optional(Schema.DateFromSelf) }))
          })
        ),
        tool("count", Schema.Struct({ n: Schema.BigIntFromSelf }))
      ])
    ])
    expect(errors).toEqual([
      "Plugin 'notes' tool 'remind' input schema cannot be turned into JSON Schema: field 'when' is DateFromSelf, which has no JSON Schema form (Missing annotation): use Schema.Date (an ISO 8601 string) or Schema.DateFromNumber (epoch milliseconds) instead, or give the tool a jsonSchema.",
      "Plugin 'notes' tool 'plan' input schema cannot be turned into JSON Schema: field 'the steps.at' is DateFromSelf, which has no JSON Schema form (Missing annotation): use Schema.Date (an ISO 8601 string) or Schema.DateFromNumber (epoch milliseconds) instead, or give the tool a jsonSchema.",
      "Plugin 'notes' tool 'count' input schema cannot be turned into JSON Schema: field 'n' is bigint, which has no JSON Schema form (Missing annotation): use Schema.BigInt (a string of digits) instead, or give the tool a jsonSchema."
    ])
    // What the message says to use instead boots.
    expect(
      bootErrors([notes([tool("remind", Schema.Struct({ text: Schema.String, when: Schema.Date }))])])
    ).toEqual([])
  })

  it("object inputs Effect writes otherwise are offered as object schemas: an empty struct, a Schema.Class, an identified struct", () => {
    class Reminder extends Schema.Class<Reminder>("Reminder")({ text: Schema.String }) {}
    const catalog = Catalog.unsafeMake([
      notes([
        tool("list_notes", Schema.Struct({})),
        tool("remind", Reminder),
        tool("find", Schema.Struct({ q: Schema.String }).annotations({ identifier: "Find" }))
      ])
    ])
    const parameters = (name: string) => catalog.toolsByName.get(name)?.parameters
    expect(parameters("list_notes")).toEqual({
      type: "object",
      required: [],
      properties: {},
      additionalProperties: false
    })
    expect(parameters("remind")).toMatchObject({
      type: "object",
      required: ["text"],
      properties: { text: { type: "string" } }
    })
    expect(parameters("find")).toMatchObject({ type: "object", properties: { q: { type: "string" } } })
    for (const name of ["list_notes", "remind", "find"])
      expect(ClientTools.checkShape(parameters(name))).toBeUndefined()
  })

  it("tsc refuses an input that does not decode to an object", () => {
    const base = { name: "x", description: "d", handler: () => "ok" }
    // @ts-expect-error Schema.String decodes to a string, not an object.
    const text: PluginTool = { ...base, input: Schema.String }
    // @ts-expect-error an array is not the arguments' object either.
    const list: PluginTool = { ...base, input: Schema.Array(Schema.String) }
    const fine: PluginTool = { ...base, input: Schema.Struct({ q: Schema.String }) }
    expect([text, list, fine]).toHaveLength(3)
  })
})
