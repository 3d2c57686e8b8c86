import { JSONSchema, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { fastStruct, jsonSchemaOf } from "../../src/internal/jsonSchema.js"

/** What the catalog offered before: `JSONSchema.make` without `$schema`. */
const reference = (schema: Schema.Schema.All): unknown => {
  const { $schema: _drop, ...rest } = JSONSchema.make(
    schema as Schema.Schema<unknown, unknown, never>
  ) as unknown as Record<string, unknown>
  return rest
}
/** Equal as data and in key order (token counts read the serialised text). */
const same = (schema: Schema.Schema.All) => {
  const fast = jsonSchemaOf(schema)
  expect(fast).toEqual(reference(schema))
  expect(JSON.stringify(fast)).toBe(JSON.stringify(reference(schema)))
}

const Limit = Schema.Int.pipe(Schema.between(1, 100))
const Id = Schema.String.pipe(Schema.minLength(1)).annotations({ identifier: "Id", description: "An id." })

describe("internal/jsonSchema jsonSchemaOf", () => {
  it.each([
    ["strings", Schema.Struct({ a: Schema.String, b: Schema.String.annotations({ description: "B." }) })],
    ["numbers and booleans", Schema.Struct({ n: Schema.Number, b: Schema.Boolean })],
    ["titles", Schema.Struct({ n: Schema.Number.annotations({ title: "N", description: "n" }) })],
    [
      "built-in texts given again",
      Schema.Struct({ s: Schema.String.annotations({ description: "a string", title: "string" }) })
    ],
    [
      "optional",
      Schema.Struct({
        a: Schema.optional(Schema.String),
        b: Schema.optional(Schema.Number).annotations({ description: "B" })
      })
    ],
    ["optionalWith exact", Schema.Struct({ a: Schema.optionalWith(Schema.String, { exact: true }) })],
    ["UndefinedOr", Schema.Struct({ a: Schema.UndefinedOr(Schema.String) })],
    [
      "literals",
      Schema.Struct({ l: Schema.Literal("x"), m: Schema.Literal(1), t: Schema.Literal(true), z: Schema.Null })
    ],
    ["literal unions", Schema.Struct({ l: Schema.Literal("a", "b"), m: Schema.Literal("a", 1) })],
    [
      "arrays",
      Schema.Struct({ xs: Schema.Array(Schema.String), ys: Schema.optional(Schema.Array(Schema.Number)) })
    ],
    [
      "refinements with identifiers ($defs)",
      Schema.Struct({ limit: Schema.optional(Limit).annotations({ description: "At most." }), n: Schema.Int })
    ],
    ["two fields sharing a definition", Schema.Struct({ a: Id, b: Schema.optional(Id), c: Limit })],
    ["nested struct", Schema.Struct({ inner: Schema.Struct({ x: Schema.String }), s: Schema.String })],
    [
      "struct description",
      Schema.Struct({ a: Schema.String }).annotations({ description: "Top.", title: "T" })
    ],
    [
      "property title on a $ref",
      Schema.Struct({ limit: Limit.annotations({ title: "L" }) }).pipe((s) =>
        Schema.Struct({ ...s.fields, d: Schema.String })
      )
    ],
    ["NullOr", Schema.Struct({ a: Schema.NullOr(Schema.String) })],
    [
      "examples and defaults",
      Schema.Struct({ a: Schema.String.annotations({ examples: ["x"], default: "y" }) })
    ],
    [
      "a jsonSchema annotation",
      Schema.Struct({ a: Schema.String.annotations({ jsonSchema: { type: "string", format: "uri" } }) })
    ],
    [
      "index signatures",
      Schema.Struct({ a: Schema.String }, Schema.Record({ key: Schema.String, value: Schema.Number }))
    ],
    ["empty struct", Schema.Struct({})],
    ["not a struct", Schema.String],
    ["a class", Schema.Class<{ a: string }>("C")({ a: Schema.String })],
    ["a field named __proto__", Schema.Struct({ ["__proto__"]: Schema.String, b: Schema.Number })]
  ] as const)("matches JSONSchema.make: %s", (_label, schema) => same(schema))

  it("throws JSONSchema.make's error for a field with no JSON Schema form", () => {
    const bad = Schema.Struct({ a: Schema.BigIntFromSelf })
    expect(() => jsonSchemaOf(bad)).toThrow()
    expect(() => jsonSchemaOf(bad)).toThrowError(
      (() => {
        try {
          JSONSchema.make(bad)
        } catch (e) {
          return (e as Error).message
        }
        return "unreachable"
      })()
    )
  })

  it("gives each struct its own objects (no sharing between tools)", () => {
    const a = jsonSchemaOf(Schema.Struct({ limit: Limit })) as { properties: { limit: object } }
    const b = jsonSchemaOf(Schema.Struct({ limit: Limit })) as { properties: { limit: object } }
    expect(a.properties.limit).toEqual(b.properties.limit)
    expect(a.properties.limit).not.toBe(b.properties.limit)
  })

  // Random structs of the handled field shapes (and a few delegated ones).
  const annotated = <S extends Schema.Schema.Any>(s: S) =>
    fc
      .record({
        description: fc.option(fc.string(), { nil: undefined }),
        title: fc.option(fc.string(), { nil: undefined })
      })
      .map(({ description, title }) =>
        description === undefined && title === undefined
          ? s
          : s.annotations({
              ...(description === undefined ? {} : { description }),
              ...(title === undefined ? {} : { title })
            })
      )
  const literal = fc.oneof(fc.string(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null))
  const field: fc.Arbitrary<Schema.Schema.Any> = fc.oneof(
    annotated(Schema.String),
    annotated(Schema.Number),
    annotated(Schema.Boolean),
    literal.map((l) => Schema.Literal(l)),
    fc.uniqueArray(fc.string(), { minLength: 2, maxLength: 3 }).map((ls) => Schema.Literal(...ls)),
    fc.constant(Limit),
    fc.constant(Id),
    fc.constant(Schema.Array(Schema.String))
  ) as fc.Arbitrary<Schema.Schema.Any>
  const property = fc
    .tuple(
      field,
      fc.constantFrom("required", "optional", "undefinedOr"),
      fc.option(fc.string(), { nil: undefined })
    )
    .map(([f, how, description]) => {
      const s = how === "optional" ? Schema.optional(f) : how === "undefinedOr" ? Schema.UndefinedOr(f) : f
      return description === undefined ? s : (s as Schema.Schema.Any).annotations({ description })
    })

  it("takes the fast path for the common shapes (so the comparisons above test it)", () => {
    for (const schema of [
      Schema.Struct({
        a: Schema.String,
        b: Schema.optional(Schema.Number).annotations({ description: "B" })
      }),
      Schema.Struct({
        limit: Schema.optional(Limit).annotations({ description: "At most." }),
        l: Schema.Literal("a")
      }),
      Schema.Struct({ a: Schema.String }).annotations({ description: "Top." })
    ])
      expect(fastStruct(schema.ast)).toBeDefined()
    expect(fastStruct(Schema.Struct({}).ast)).toBeUndefined()
    expect(
      fastStruct(
        Schema.Struct({ a: Schema.String }, Schema.Record({ key: Schema.String, value: Schema.Number })).ast
      )
    ).toBeUndefined()
  })

  it("property: equals JSONSchema.make on random structs of the handled shapes", () => {
    let fast = 0
    let runs = 0
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), property, { minKeys: 1, maxKeys: 6 }),
        (fields) => {
          const schema = Schema.Struct(fields as Record<string, Schema.Schema.Any>)
          runs++
          if (fastStruct(schema.ast) !== undefined) fast++
          same(schema)
        }
      ),
      { numRuns: 500 }
    )
    // The property must really exercise the direct path: about a quarter of random structs take
    // it (the rest mix in field types it hands to Effect), so a tenth is a bound no seed misses.
    expect(fast).toBeGreaterThan(runs / 10)
  })
})
