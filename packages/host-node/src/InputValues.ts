/**
 * The check of an `input` wait's answer (issue 40, docs/waiting.md): the user's values must fit
 * the JSON Schema the tool asked with (an MCP elicitation's `requestedSchema`), checked with Ajv
 * before the values go back to the server. A fresh Ajv per check: the schema is the server's, and
 * one declaring an `$id` must not be filed beside any other (see `JsonSchemaCheck.ts`).
 */
import { describe } from "@plugboard/core"
import { Ajv } from "ajv"

/** Why `values` do not fit `schema`, as a sentence for the client, or undefined when they fit. */
export const misfitValues = (
  schema: Readonly<Record<string, unknown>>,
  values: Readonly<Record<string, unknown>>
): string | undefined => {
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true, logger: false })
  let validate: ReturnType<Ajv["compile"]>
  try {
    validate = ajv.compile(schema)
  } catch (error) {
    return `the form's schema cannot be checked (${describe(error).slice(0, 200)}), so no values can answer it; decline instead`
  }
  if (validate(values)) return undefined
  return `the values do not fit the form: ${ajv.errorsText(validate.errors, { dataVar: "values" }).slice(0, 500)}`
}
