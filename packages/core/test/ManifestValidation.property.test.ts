import { PluginManifest, validateManifest } from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const isResult = (result: ReturnType<typeof validateManifest>, name: string) => {
  expect(Array.isArray(result.errors)).toBe(true)
  expect(Array.isArray(result.warnings)).toBe(true)
  for (const m of [...result.errors, ...result.warnings]) {
    expect(typeof m).toBe("string")
    expect(m.startsWith(`Plugin '${name}' `)).toBe(true)
  }
  expect(result.valid).toBe(result.errors.length === 0)
}

const decodes = Schema.decodeUnknownEither(PluginManifest)

/** Manifest-shaped values: every field either well-typed or a random JSON value. */
const nearlyManifest = fc.record(
  {
    title: fc.oneof(fc.string(), fc.jsonValue()),
    summary: fc.oneof(fc.string(), fc.jsonValue()),
    whenToUse: fc.oneof(fc.array(fc.string(), { maxLength: 10 }), fc.jsonValue()),
    whenNotToUse: fc.oneof(fc.array(fc.string()), fc.jsonValue()),
    examples: fc.oneof(
      fc.array(
        fc.record(
          {
            user: fc.oneof(fc.string(), fc.jsonValue()),
            thought: fc.string(),
            tool: fc.oneof(fc.constantFrom("get_a", "get_b", "nope"), fc.jsonValue()),
            args: fc.oneof(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue())
          },
          { requiredKeys: [] }
        ),
        { maxLength: 4 }
      ),
      fc.jsonValue()
    ),
    tags: fc.oneof(fc.array(fc.string()), fc.jsonValue()),
    category: fc.oneof(fc.constantFrom("data", "core", "ui", "Data"), fc.jsonValue()),
    visibility: fc.oneof(fc.constantFrom("always", "on-demand", "silent", "hidden"), fc.jsonValue()),
    stability: fc.oneof(fc.constantFrom("stable", "beta", "experimental", "alpha"), fc.jsonValue())
  },
  { requiredKeys: [] }
)

describe("validateManifest properties", () => {
  it("never throws on arbitrary JSON and returns arrays of prefixed strings", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.option(fc.array(fc.string()), { nil: undefined }), (manifest, tools) => {
        isResult(validateManifest(manifest, "any", tools), "any")
      }),
      { numRuns: 500 }
    )
  })

  it("never throws on anything at all (functions, symbols, getters, prototypes, sparse arrays)", () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withBoxedValues: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withNullPrototype: true,
          withObjectString: true,
          withSparseArray: true,
          withTypedArray: true,
          withUnicodeString: true
        }),
        (manifest) => {
          isResult(validateManifest(manifest, "any"), "any")
        }
      ),
      { numRuns: 500 }
    )
  })

  it("agrees with the PluginManifest schema: whatever it accepts, the schema decodes", () => {
    fc.assert(
      fc.property(nearlyManifest, (manifest) => {
        const result = validateManifest(manifest, "p", ["get_a", "get_b"])
        isResult(result, "p")
        if (result.valid) expect(Either.isRight(decodes(manifest))).toBe(true)
        if (Either.isLeft(decodes(manifest))) expect(result.valid).toBe(false)
      }),
      { numRuns: 1000 }
    )
  })

  it("soft rules never fail a manifest: long and uppercase content keeps a valid one valid", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((s) => s.trim().length > 0),
        fc.array(
          fc.string({ minLength: 1, maxLength: 300 }).filter((s) => s.trim().length > 0),
          {
            minLength: 1,
            maxLength: 20
          }
        ),
        fc.array(fc.string()),
        (summary, whenToUse, tags) => {
          const result = validateManifest(
            { title: "T", summary: summary.repeat(20), whenToUse, tags },
            "p",
            []
          )
          expect(result.errors).toEqual([])
        }
      )
    )
  })
})
