/** The Ajv check of client tools' schemas: meta-schema and compilation, dialects, cache. */
import { ClientTools } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeJsonSchemaCheck } from "../src/JsonSchemaCheck.js"

const obj = (extra: Record<string, unknown>) => ({ type: "object", ...extra })

describe("JsonSchemaCheck", () => {
  it.each([
    [
      "an invalid value of a known keyword (minLength)",
      obj({ properties: { a: { minLength: "abc" } } }),
      /\/properties\/a\/minLength must be integer/
    ],
    [
      "an invalid regular expression",
      obj({ properties: { a: { type: "string", pattern: "(" } } }),
      /pattern is not a valid regular expression.*\/\(\//
    ],
    ["a `not` that is no schema", obj({ not: 5 }), /\/not must be object,boolean/],
    ["a `$ref` that is no string", obj({ $ref: 42 }), /\/\$ref must be string/],
    ["a negative minProperties", obj({ minProperties: -1 }), /\/minProperties must be >= 0/],
    [
      "an unknown type",
      obj({ properties: { a: { type: "strin" } } }),
      /\/properties\/a\/type must be equal to one of the allowed values \("array"/
    ],
    ["a required list of non-strings", obj({ required: [1] }), /\/required\/0 must be string/],
    [
      "a $ref resolving to nothing",
      obj({ properties: { a: { $ref: "#/definitions/nope" } } }),
      /\$ref cannot resolve reference #\/definitions\/nope/
    ],
    [
      "a remote $ref (never fetched)",
      obj({ properties: { a: { $ref: "https://example.com/a.json" } } }),
      /cannot resolve reference https:\/\/example.com/
    ],
    [
      "an unsupported dialect",
      obj({ $schema: "http://json-schema.org/draft-04/schema#" }),
      /\$schema 'http:\/\/json-schema.org\/draft-04\/schema#' is not supported/
    ],
    [
      "a draft-07 tuple `items` under 2020-12",
      obj({
        $schema: "https://json-schema.org/draft/2020-12/schema",
        properties: { a: { items: [{ type: "string" }] } }
      }),
      /\/properties\/a\/items must be object,boolean/
    ]
  ])("refuses %s", (_what, schema, message) => {
    expect(makeJsonSchemaCheck().check(schema)).toMatch(message)
  })

  it.each([
    [
      "a plain draft-07 schema",
      obj({ properties: { q: { type: "string", minLength: 1 } }, required: ["q"] })
    ],
    [
      "draft-07 named, with definitions and a local $ref",
      {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        definitions: { point: { type: "object", properties: { x: { type: "number" } } } },
        properties: {
          at: { $ref: "#/definitions/point" },
          tags: { type: "array", items: [{ type: "string" }] }
        }
      }
    ],
    [
      "2020-12 with $defs and prefixItems",
      {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        $defs: { id: { type: "string", pattern: "^[a-z]+$" } },
        properties: {
          id: { $ref: "#/$defs/id" },
          pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }] }
        }
      }
    ],
    [
      "2019-09",
      {
        $schema: "https://json-schema.org/draft/2019-09/schema",
        type: "object",
        properties: { a: { type: "string" } }
      }
    ],
    [
      "OpenAI function parameters in strict style",
      {
        type: "object",
        properties: {
          location: { type: "string", description: "City and country, e.g. Paris, France" },
          units: { type: ["string", "null"], enum: ["celsius", "fahrenheit", null] }
        },
        required: ["location", "units"],
        additionalProperties: false,
        strict: true
      }
    ],
    [
      "provider extras: unknown keywords and formats, an escape the u flag would refuse",
      obj({
        "x-order": 1,
        properties: {
          when: { type: "string", format: "date-time" },
          code: { type: "string", pattern: "^\\d{3}\\-\\d{4}$" }
        }
      })
    ],
    ["the same $id twice (schemas are not kept)", obj({ $id: "https://example.com/tool", properties: {} })]
  ])("accepts %s", (_what, schema) => {
    const checker = makeJsonSchemaCheck()
    expect(checker.check(schema)).toBeUndefined()
    expect(checker.check({ ...schema, description: "again" })).toBeUndefined()
  })

  it("caches verdicts by the schema's JSON, bounded, least recently used out", () => {
    const checker = makeJsonSchemaCheck({ cacheSize: 2 })
    const a = obj({ properties: { a: { type: "string" } } })
    const bad = obj({ not: 5 })
    expect(checker.check(a)).toBeUndefined()
    expect(checker.check(structuredClone(a))).toBeUndefined()
    expect(checker.cached()).toBe(1)
    expect(checker.check(bad)).toMatch(/\/not/)
    expect(checker.check(structuredClone(bad))).toMatch(/\/not/)
    expect(checker.cached()).toBe(2)
    checker.check(obj({ properties: { c: {} } }))
    expect(checker.cached()).toBe(2)
  })

  it.each([
    ["draft-07", "http://json-schema.org/draft-07/schema", undefined],
    ["draft-07 (with #)", "http://json-schema.org/draft-07/schema#", undefined],
    [
      "2020-12",
      "https://json-schema.org/draft/2020-12/schema",
      "https://json-schema.org/draft/2020-12/schema"
    ],
    [
      "2019-09",
      "https://json-schema.org/draft/2019-09/schema",
      "https://json-schema.org/draft/2019-09/schema"
    ]
  ])("a client's $id naming the %s meta-schema leaves every later check intact", (_what, id, dialect) => {
    const checker = makeJsonSchemaCheck()
    const withDialect = (schema: Record<string, unknown>) =>
      dialect === undefined ? schema : { $schema: dialect, ...schema }
    // Root and nested, as the schema itself and as a subschema.
    checker.check(withDialect(obj({ $id: id })))
    checker.check(withDialect(obj({ properties: { a: { $id: id, type: "string" } } })))
    expect(checker.check(withDialect(obj({ properties: { q: { type: "number" } } })))).toBeUndefined()
    expect(checker.check(withDialect(obj({ properties: { q: { minLength: "x" } } })))).toMatch(
      /must be integer/
    )
  })

  it("a cached verdict is the verdict: a bad schema stays refused turn after turn", () => {
    const checker = makeJsonSchemaCheck()
    const bad = obj({ properties: { a: { type: "string", pattern: "[" } } })
    for (let i = 0; i < 3; i++) expect(checker.check(bad)).toMatch(/regular expression/)
  })

  it("never throws on any object schema core lets through", () => {
    const checker = makeJsonSchemaCheck({ cacheSize: 10 })
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 4 })), (extra) => {
        const schema = { ...extra, type: "object" }
        fc.pre(ClientTools.checkShape(schema) === undefined)
        const verdict = checker.check(schema)
        expect(verdict === undefined || typeof verdict === "string").toBe(true)
      }),
      { numRuns: 200 }
    )
  })

  it("the deepest and largest schemas core lets through are checked without overflowing", () => {
    const checker = makeJsonSchemaCheck()
    let deep: Record<string, unknown> = { type: "object" }
    while (ClientTools.checkShape({ type: "object", not: deep }) === undefined)
      deep = { type: "object", not: deep }
    expect(ClientTools.checkShape(deep)).toBeUndefined()
    expect(checker.check(deep)).toBeUndefined()
    const width = Math.floor((ClientTools.MAX_SCHEMA_NODES - 3) / 3)
    const wide = obj({
      properties: Object.fromEntries(Array.from({ length: width }, (_, i) => [`p${i}`, { type: "string" }]))
    })
    expect(ClientTools.checkShape(wide)).toBeUndefined()
    expect(checker.check(wide)).toBeUndefined()
  })
})
