import { checkManifestRules, isCleanManifest, PluginManifest, validateManifest } from "@plugboard/core"
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

/** Manifests that satisfy every rule (strings drawn to hit edge cases: unicode, spaces, case). */
const text = (max: number) =>
  fc.oneof(
    // Mostly printable ASCII (the fast path's ground), sometimes any grapheme (the full path's).
    { weight: 19, arbitrary: fc.stringMatching(new RegExp(`^[!-~][ -~]{0,${max - 1}}$`)) },
    {
      weight: 1,
      arbitrary: fc
        .string({ unit: "grapheme", minLength: 1, maxLength: max })
        .filter((s) => s.trim().length > 0 && s.length <= max && !/[\r\n]/.test(s))
    }
  )
const cleanManifest = fc
  .tuple(
    fc.uniqueArray(fc.stringMatching(/^[a-z_]{1,12}$/), { minLength: 1, maxLength: 4 }),
    fc.constantFrom(undefined, "always", "on-demand", "silent"),
    fc.uniqueArray(fc.stringMatching(/^[a-z0-9 -]{0,12}$/), { maxLength: 5 }),
    fc.array(text(100), { minLength: 1, maxLength: 8 }),
    text(120),
    text(40)
  )
  .map(([tools, visibility, tags, whenToUse, summary, title]) => ({
    tools,
    manifest: {
      title,
      summary,
      whenToUse,
      tags,
      ...(visibility === undefined ? {} : { visibility }),
      examples: tools.map((tool) => ({ user: `use ${tool}`, tool, args: { a: 1 } }))
    }
  }))

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

describe("the clean-manifest fast path", () => {
  it("agrees with the full rules on near-manifests and on anything at all", () => {
    const same = (manifest: unknown, tools?: readonly string[]) => {
      const full = checkManifestRules(manifest, "p", tools)
      expect(validateManifest(manifest, "p", tools)).toEqual(full)
      if (isCleanManifest(manifest, tools)) expect(full).toEqual({ valid: true, errors: [], warnings: [] })
    }
    fc.assert(
      fc.property(
        nearlyManifest,
        fc.option(fc.constantFrom(["get_a", "get_b"], []), { nil: undefined }),
        same
      ),
      { numRuns: 2000 }
    )
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withSparseArray: true }), (m) => same(m)),
      { numRuns: 300 }
    )
  })

  it("agrees with the full rules on clean manifests with one field made tricky", () => {
    const tricky = fc.constantFrom<unknown>(
      "",
      " ",
      "\u00a0x",
      " leading",
      "x\ny",
      "x\r",
      "Upper",
      "ÉCOLE",
      "école",
      "x".repeat(101),
      "x".repeat(121),
      "x".repeat(120),
      ["x".repeat(100)],
      ["x".repeat(101)],
      [],
      [""],
      ["\u3000"],
      ["ok", "ok"],
      ["Ok"],
      Array.from({ length: 9 }, () => "w"),
      [{ user: "u", tool: "get_a" }],
      [{ user: " ", tool: "x" }],
      [{ user: "u", tool: "x", extra: 1 }],
      [{ user: "u", tool: "x", thought: 3 }],
      [{ user: "u", tool: "x", args: [1] }],
      [{ user: 1, tool: "x" }],
      "silent",
      "always",
      "data",
      undefined,
      null
    )
    const field = fc.constantFrom(
      "title",
      "summary",
      "whenToUse",
      "whenNotToUse",
      "tags",
      "examples",
      "visibility",
      "category",
      "stability",
      "extra"
    )
    fc.assert(
      fc.property(
        cleanManifest,
        field,
        tricky,
        fc.boolean(),
        ({ manifest, tools }, key, value, withTools) => {
          const m = { ...manifest, [key]: value }
          const names = withTools ? tools : undefined
          expect(validateManifest(m, "p", names)).toEqual(checkManifestRules(m, "p", names))
        }
      ),
      { numRuns: 5000 }
    )
  })

  it("generated clean manifests pass the full rules; a plain ASCII one takes the fast path", () => {
    fc.assert(
      fc.property(cleanManifest, ({ manifest, tools }) => {
        expect(checkManifestRules(manifest, "p", tools)).toEqual({ valid: true, errors: [], warnings: [] })
      }),
      { numRuns: 500 }
    )
    expect(isCleanManifest({ title: "T", summary: "S", whenToUse: ["w"], tags: ["ok"] })).toBe(true)
    // The agreement properties above mean something only if the fast path is often taken.
    const taken = fc
      .sample(cleanManifest, 500)
      .filter(({ manifest, tools }) => isCleanManifest(manifest, tools))
    expect(taken.length).toBeGreaterThan(150)
  })
})
