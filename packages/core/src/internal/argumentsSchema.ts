/**
 * The one rule of a tool's argument schema, whatever wrote the tool (a TypeScript plugin, an MCP
 * server, a client's `browserTools` / `agActions`): the model sends a tool's arguments as one
 * JSON object, and providers refuse a tool whose parameters are anything else, so the schema is
 * a JSON Schema object whose `type` is `object` (docs/plugins.md#6-what-boot-checks). Client and
 * MCP tools add size bounds on top (`ClientTools.checkShape`); a TypeScript tool's schema is
 * derived from its Effect Schema, and what cannot be derived is explained here too: which field,
 * and what to write instead.
 */
import { SchemaAST as AST } from "effect"

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** What is wrong with `schema` as a tool's argument schema, or `undefined`. */
export const objectSchemaProblem = (schema: unknown): string | undefined => {
  if (!isRecord(schema)) return "the schema must be a JSON Schema object"
  if (schema.type !== "object") return "the schema's type must be 'object' (the arguments are an object)"
  return undefined
}

/** What the schema is instead of an object, for messages: `type 'string'`, `a union (anyOf)`. */
export const schemaKind = (schema: unknown): string => {
  if (!isRecord(schema)) return Array.isArray(schema) ? "an array" : `${typeof schema}`
  const type = schema.type
  if (typeof type === "string") return `type '${type}'`
  if (Array.isArray(type)) return `type ${JSON.stringify(type)}`
  for (const key of ["anyOf", "oneOf"]) if (key in schema) return `a union (${key})`
  if ("$ref" in schema) return `a reference (${String(schema.$ref)})`
  return "no type"
}

/**
 * `schema` with a top-level `$ref` into its own `$defs` replaced by what it names (the
 * definitions kept, for references inside): `JSONSchema.make` writes a `Schema.Class` or a struct
 * with an `identifier` that way, and providers read only the top level's `type`.
 */
export const inlineTopLevelRef = (
  schema: Readonly<Record<string, unknown>>
): Readonly<Record<string, unknown>> => {
  const ref = schema.$ref
  const defs = schema.$defs
  if (typeof ref !== "string" || !ref.startsWith("#/$defs/") || !isRecord(defs)) return schema
  const target = defs[ref.slice("#/$defs/".length).replaceAll("~1", "/").replaceAll("~0", "~")]
  if (!isRecord(target)) return schema
  const { $ref: _ref, $defs: _defs, ...rest } = schema
  return { $defs: defs, ...target, ...rest }
}

/**
 * The JSON Schema of an empty `Schema.Struct({})` (a tool without arguments) as an object schema
 * with no properties; `undefined` for any other schema. `JSONSchema.make` writes `{}` as "an
 * object or an array" (`anyOf`), which no provider takes as a tool's parameters.
 */
export const emptyStructJson = (ast: AST.AST): Readonly<Record<string, unknown>> | undefined => {
  if (ast._tag !== "TypeLiteral" || ast.propertySignatures.length > 0 || ast.indexSignatures.length > 0)
    return undefined
  const description = ast.annotations[AST.DescriptionAnnotationId]
  const title = ast.annotations[AST.TitleAnnotationId]
  return {
    type: "object",
    required: [],
    properties: {},
    additionalProperties: false,
    ...(typeof description === "string" ? { description } : {}),
    ...(typeof title === "string" ? { title } : {})
  }
}

/** What to write instead of an Effect schema with no JSON form, by the name Effect gives it. */
const INSTEAD: Readonly<Record<string, string>> = {
  DateFromSelf: "Schema.Date (an ISO 8601 string) or Schema.DateFromNumber (epoch milliseconds)",
  DateTimeUtcFromSelf: "Schema.DateTimeUtc (an ISO 8601 string)",
  bigint: "Schema.BigInt (a string of digits)",
  BigIntFromSelf: "Schema.BigInt (a string of digits)",
  BigDecimalFromSelf: "Schema.BigDecimal (a string)",
  URLFromSelf: "Schema.URL (a string)",
  Uint8ArrayFromSelf: "Schema.Uint8ArrayFromBase64 (a string)",
  DurationFromSelf: "Schema.Duration"
}

/** `["a b"]["c"][1]` (Effect's path) → `a b.c[1]`. */
const readPath = (text: string): string => {
  let out = ""
  for (const m of text.matchAll(/\[("(?:[^"\\]|\\.)*"|\d+)\]/g)) {
    const part = m[1]!
    if (part.startsWith('"')) {
      let key: string
      try {
        key = JSON.parse(part) as string
      } catch {
        key = part.slice(1, -1)
      }
      out += out.length === 0 ? key : `.${key}`
    } else out += `[${part}]`
  }
  return out
}

/**
 * Why an Effect Schema has no JSON Schema, from the error `JSONSchema.make` threw: the field
 * (`at path`), the schema there, and what to use instead, e.g. `field 'when' is DateFromSelf,
 * which has no JSON form (Missing annotation): use Schema.Date (...)`.
 */
export const explainJsonSchemaError = (message: string): string => {
  const lines = message.split("\n")
  const head = lines[0]?.trim() || "unknown error"
  const at = lines.find((l) => l.startsWith("at path: "))
  const path = at === undefined ? "" : readPath(at.slice("at path: ".length))
  const schemaLine = lines.find((l) => /^schema \([^)]*\): /.test(l))
  const name = schemaLine?.replace(/^schema \([^)]*\): /, "").trim()
  // Not Effect's report of a schema it cannot write (a getter that threw, a bug): say it as it is.
  if (at === undefined && schemaLine === undefined) return `${head}; give the tool a jsonSchema`
  const where = path === "" ? "the input itself" : `field '${path}'`
  const what = name === undefined || name.startsWith("<") ? "" : ` is ${name}, which`
  const instead = name === undefined ? undefined : INSTEAD[name]
  return `${where}${what} has no JSON Schema form (${head}): use ${
    instead ?? "a schema whose encoded form is JSON (a string, number, boolean, array or struct)"
  } instead, or give the tool a jsonSchema`
}
