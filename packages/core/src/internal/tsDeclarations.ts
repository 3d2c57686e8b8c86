/**
 * JSON Schemas rendered as TypeScript types, for code mode's API text (`CodeMode.api`): the model
 * reads `get_current_weather(input: { city: string; units?: "metric" | "imperial" })` more
 * cheaply than the schema itself, and writes calls that type-check against it.
 *
 * Terse on purpose, since the text is paid on every model call while code mode is on: no property
 * descriptions, no formats or bounds. A local `$ref` (`#/$defs/…`, as Effect writes shared
 * types) is followed. A part the renderer does not know (a `$ref` out of the schema, `not`, a
 * keyword-less `{}`) is `unknown`, never an error; nesting deeper than `MAX_DEPTH` is `unknown`
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

const objectType = (schema: Json, depth: number, root: unknown): string => {
  const properties = isObject(schema.properties) ? schema.properties : {}
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : []
  )
  const fields = Object.entries(properties).map(
    ([key, value]) => `${propertyKey(key)}${required.has(key) ? "" : "?"}: ${typeOf(value, depth + 1, root)}`
  )
  const extra = schema.additionalProperties
  if (isObject(extra)) fields.push(`[key: string]: ${typeOf(extra, depth + 1, root)}`)
  if (fields.length === 0) return extra === false ? "{}" : "Record<string, unknown>"
  return `{ ${fields.join("; ")} }`
}

const byType = (type: string, schema: Json, depth: number, root: unknown): string => {
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
      if (Array.isArray(items)) return `[${items.map((i) => typeOf(i, depth + 1, root)).join(", ")}]`
      return `Array<${typeOf(items, depth + 1, root)}>`
    }
    case "object":
      return objectType(schema, depth, root)
    default:
      return "unknown"
  }
}

/** The TypeScript type of a JSON Schema (see the module doc for what is left out). */
export const typeOf = (schema: unknown, depth = 0, root: unknown = schema): string => {
  if (schema === true || schema === undefined) return "unknown"
  if (schema === false) return "never"
  if (!isObject(schema) || depth > MAX_DEPTH) return "unknown"
  // A reference counts as a level of nesting, so a cycle of references ends as `unknown`.
  if (typeof schema.$ref === "string") return typeOf(resolve(root, schema.$ref), depth + 1, root)
  if ("const" in schema) return literal(schema.const)
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal))
  const alternatives = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : undefined
  if (alternatives !== undefined) return union(alternatives.map((a) => typeOf(a, depth + 1, root)))
  const type = schema.type
  if (Array.isArray(type))
    return union(type.map((t) => (typeof t === "string" ? byType(t, schema, depth, root) : "unknown")))
  if (typeof type === "string") return byType(type, schema, depth, root)
  if (isObject(schema.properties)) return objectType(schema, depth, root)
  if (schema.items !== undefined) return byType("array", schema, depth, root)
  return "unknown"
}

/** The part of `root` a local reference (`#/$defs/Int`) points at; `undefined` for any other. */
const resolve = (root: unknown, ref: string): unknown => {
  if (!ref.startsWith("#/")) return undefined
  let at: unknown = root
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~")
    if (!isObject(at) || !Object.hasOwn(at, key)) return undefined
    at = at[key]
  }
  return at
}
