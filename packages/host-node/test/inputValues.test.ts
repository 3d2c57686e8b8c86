/**
 * The check of an input wait's values against the form's JSON Schema (`InputValues.ts`, issue 40):
 * values built to fit a flat form (MCP elicitation's primitive properties) always pass; the same
 * values with one property of the wrong type never do, and the reason names it; a schema Ajv cannot
 * compile is said so (decline instead); a schema with an `$id` is checked on its own each time.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { misfitValues } from "../src/InputValues.js"

type Kind = "string" | "integer" | "number" | "boolean"
const fitting: Record<Kind, fc.Arbitrary<unknown>> = {
  string: fc.string(),
  integer: fc.integer(),
  number: fc.double({ noNaN: true, noDefaultInfinity: true }),
  boolean: fc.boolean()
}
/** A value no property of `kind` accepts. */
const wrongFor: Record<Kind, unknown> = { string: 3, integer: 1.5, number: "3", boolean: "yes" }

const form = fc.dictionary(
  fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/),
  fc.constantFrom<Kind>("string", "integer", "number", "boolean"),
  { minKeys: 1, maxKeys: 6 }
)

describe("misfitValues", () => {
  it("values that fit a flat form pass; one wrong-typed property fails, named (property)", () => {
    fc.assert(
      fc.property(
        form.chain((kinds) =>
          fc.tuple(
            fc.constant(kinds),
            fc.record(Object.fromEntries(Object.entries(kinds).map(([k, kind]) => [k, fitting[kind]]))),
            fc.constantFrom(...Object.keys(kinds))
          )
        ),
        ([kinds, values, broken]) => {
          const schema = {
            type: "object",
            properties: Object.fromEntries(Object.entries(kinds).map(([k, type]) => [k, { type }])),
            required: Object.keys(kinds)
          }
          expect(misfitValues(schema, values)).toBeUndefined()
          const why = misfitValues(schema, { ...values, [broken]: wrongFor[kinds[broken]!] })
          expect(why).toContain(`values/${broken} must be`)
        }
      )
    )
  })

  it("a schema that does not compile is said so; an $id schema is checked afresh each time", () => {
    expect(misfitValues({ type: "object", properties: { a: { $ref: "#/nowhere" } } }, { a: 1 })).toMatch(
      /^the form's schema cannot be checked .*decline instead$/
    )
    const withId = { $id: "https://example.test/form", type: "object", required: ["a"] }
    expect(misfitValues(withId, { a: 1 })).toBeUndefined()
    expect(misfitValues(withId, {})).toContain("must have required property 'a'")
  })
})
