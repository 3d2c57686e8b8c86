/**
 * JSON Schemas rendered as TypeScript types, for code mode's API text (`CodeMode.api`): the model
 * reads `get_current_weather(input: { city: string; units?: "metric" | "imperial" })` more
 * cheaply than the schema itself, and writes calls that type-check against it.
 *
 * Terse on purpose, since the text is paid on every model call while code mode is on: no property
 * descriptions, no formats or bounds. A schema part the renderer does not know (a `$ref`, `not`,
 * a keyword-less `{}`) is `unknown`, never an error; nesting deeper than `MAX_DEPTH` is `unknown`
 * too, so a hostile schema costs a bounded text.
 */

type Json = Readonly<Record<string, unknown>>

/** Levels of nesting rendered; deeper parts are `unknown`. */
export const MAX_DEPTH = 6

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** A property key as TypeScript writes it: bare when it is an identifier, quoted otherwise. */
export const propertyKey = (key: string): string => (IDENTIFIER.test(key) ? key : JSON.stringify(key))

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v)

const literal = (v: unknown): string =>
  v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean"
    ? JSON.stringify(v)
    : "unknown"

const union = (parts: ReadonlyArray<string>): string => {
  const unique = [...new Set(parts)]
  if (unique.length === 0) return "never"
  if (unique.includes("unknown")) return "unknown"
  return unique.join(" | ")
}

const objectType = (schema: Json, depth: number): string => {
  const properties = isObject(schema.properties) ? schema.properties : {}
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : []
  )
  const fields = Object.entries(properties).map(
    ([key, value]) => `${propertyKey(key)}${required.has(key) ? "" : "?"}: ${typeOf(value, depth + 1)}`
  )
  const extra = schema.additionalProperties
  if (isObject(extra)) fields.push(`[key: string]: ${typeOf(extra, depth + 1)}`)
  if (fields.length === 0) return extra === false ? "{}" : "Record<string, unknown>"
  return `{ ${fields.join("; ")} }`
}

const byType = (type: string, schema: Json, depth: number): string => {
  switch (type) {
    case "string":
      return "string"
    case "number":
    case "integer":
      return "number"
    case "boolean":
      return "boolean"
    case "null":
      return "null"
    case "array": {
      const items = schema.items
      if (Array.isArray(items)) return `[${items.map((i) => typeOf(i, depth + 1)).join(", ")}]`
      return `Array<${typeOf(items, depth + 1)}>`
    }
    case "object":
      return objectType(schema, depth)
    default:
      return "unknown"
  }
}

/** The TypeScript type of a JSON Schema (see the module doc for what is left out). */
export const typeOf = (schema: unknown, depth = 0): string => {
  if (schema === true || schema === undefined) return "unknown"
  if (schema === false) return "never"
  if (!isObject(schema) || depth > MAX_DEPTH) return "unknown"
  if ("const" in schema) return literal(schema.const)
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal))
  const alternatives = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : undefined
  if (alternatives !== undefined) return union(alternatives.map((a) => typeOf(a, depth + 1)))
  const type = schema.type
  if (Array.isArray(type))
    return union(type.map((t) => (typeof t === "string" ? byType(t, schema, depth) : "unknown")))
  if (typeof type === "string") return byType(type, schema, depth)
  if (isObject(schema.properties)) return objectType(schema, depth)
  if (schema.items !== undefined) return byType("array", schema, depth)
  return "unknown"
}
