/**
 * Checks each manifest example's `args` against the input of the tool it calls, so an example
 * that teaches the model a wrong call is caught at boot (docs/plugins.md#6-what-boot-checks). Soft: each
 * field that does not fit is one `[boot-warning]`, the plugin still loads.
 *
 * A tool with an Effect Schema `input` (and no `jsonSchema` override) is checked by decoding the
 * args with it, every issue collected and extra fields refused. A tool offered with a JSON Schema
 * (`jsonSchema`: MCP tools, hand-written schemas) is checked as far as core can without a JSON
 * Schema validator: required fields, fields `additionalProperties: false` refuses, and each
 * top-level field's `type`, `enum` or `const`.
 */
import { Either, ParseResult, Schema, type SchemaAST } from "effect"
import type { JsonSchema } from "../Plugin.js"
import type { CatalogTool } from "./catalog/entry.js"
import { shown } from "./text.js"

/** Most examples read from one manifest (the manifest rules cap them the same way). */
const MAX_EXAMPLES = 1000
/** Longest value echoed back in a message. */
const MAX_ECHO = 60

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A value as a message quotes it: JSON, shortened. */
const quote = (value: unknown): string => {
  let text: string
  try {
    text = value === undefined ? "undefined" : (JSON.stringify(value) ?? String(value))
  } catch {
    text = Array.isArray(value) ? "an array" : typeof value
  }
  return shown(text, MAX_ECHO)
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: "a string",
  number: "a number",
  integer: "an integer",
  boolean: "a boolean",
  array: "an array",
  object: "an object",
  null: "null"
}

const fitsType = (type: string, value: unknown): boolean => {
  switch (type) {
    case "string":
      return typeof value === "string"
    case "number":
      return typeof value === "number" && Number.isFinite(value)
    case "integer":
      return typeof value === "number" && Number.isInteger(value)
    case "boolean":
      return typeof value === "boolean"
    case "array":
      return Array.isArray(value)
    case "object":
      return isRecord(value)
    case "null":
      return value === null
    default:
      return true
  }
}

const sameJson = (a: unknown, b: unknown): boolean => {
  try {
    return JSON.stringify(a) === JSON.stringify(b)
  } catch {
    return false
  }
}

/**
 * What a JSON Schema property expects, in words, when `value` plainly does not fit its `type`,
 * `enum` or `const`; `undefined` when it fits them (or the schema says nothing core can read).
 */
const misfit = (property: unknown, value: unknown): string | undefined => {
  if (!isRecord(property)) return undefined
  const { type, enum: choices, const: constant } = property
  if (Array.isArray(choices) && choices.length > 0) {
    if (choices.some((c) => sameJson(c, value))) return undefined
    return `one of ${choices.map((c) => quote(c)).join(", ")}`
  }
  if (constant !== undefined) return sameJson(constant, value) ? undefined : quote(constant)
  const types = typeof type === "string" ? [type] : Array.isArray(type) ? type : []
  const known = types.filter((t): t is string => typeof t === "string" && TYPE_NAMES[t] !== undefined)
  if (known.length === 0 || known.length !== types.length) return undefined
  if (known.some((t) => fitsType(t, value))) return undefined
  return known.map((t) => TYPE_NAMES[t]).join(" or ")
}

/** An example's problems in one order whatever found them: missing, unknown, then misfits. */
class Problems {
  private readonly missingFields: string[] = []
  private readonly unknownFields: string[] = []
  private readonly misfits: string[] = []
  missing(field: string): void {
    this.missingFields.push(`args is missing required field '${field}'`)
  }
  unknown(field: string): void {
    this.unknownFields.push(`args has unknown field '${field}'`)
  }
  misfit(problem: string): void {
    this.misfits.push(problem)
  }
  all(): string[] {
    return [...this.missingFields, ...this.unknownFields, ...this.misfits]
  }
}

const doesNotFit = (field: string, expected: string, value: unknown): string =>
  `args field '${field}' does not fit the tool's input: expected ${expected}, got ${quote(value)}`

/** The problems of `args` against a JSON Schema, top-level fields only. */
const jsonSchemaProblems = (schema: JsonSchema, args: Record<string, unknown>): string[] => {
  const problems = new Problems()
  const properties = isRecord(schema.properties) ? schema.properties : {}
  const required = Array.isArray(schema.required) ? schema.required : []
  for (const field of required) {
    if (typeof field === "string" && args[field] === undefined) problems.missing(shown(field))
  }
  for (const [field, value] of Object.entries(args)) {
    if (!Object.hasOwn(properties, field)) {
      if (schema.additionalProperties === false) problems.unknown(shown(field))
      continue
    }
    const expected = misfit(properties[field], value)
    if (expected !== undefined) problems.misfit(doesNotFit(shown(field), expected, value))
  }
  return problems.all()
}

/** `a.b[0]`: a ParseIssue path as a field name. */
const fieldOf = (path: ReadonlyArray<PropertyKey>): string =>
  path
    .map((key, i) => (typeof key === "number" ? `[${key}]` : `${i === 0 ? "" : "."}${shown(String(key))}`))
    .join("")

const valueAt = (args: unknown, path: ReadonlyArray<PropertyKey>): unknown => {
  let value = args
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined
    value = (value as Record<PropertyKey, unknown>)[key]
  }
  return value
}

/** The problems of `args` against an Effect Schema: every issue of one decode, one per field. */
const effectSchemaProblems = (
  input: Schema.Schema<unknown, unknown, never>,
  parameters: JsonSchema,
  args: Record<string, unknown>
): string[] => {
  const decoded = Schema.decodeUnknownEither(input, { errors: "all", onExcessProperty: "error" })(args)
  if (Either.isRight(decoded)) return []
  const problems = new Problems()
  const seen = new Set<string>()
  const properties = isRecord(parameters.properties) ? parameters.properties : {}
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(decoded.left)) {
    // An async transformation cannot run here: that says nothing about the example.
    if (issue._tag === "Forbidden") continue
    const field = fieldOf(issue.path)
    if (seen.has(field)) continue
    seen.add(field)
    const top = issue.path.length === 1
    if (field === "") {
      problems.misfit(`args do not fit the tool's input: ${issue.message}`)
    } else if (issue._tag === "Missing" && top) {
      problems.missing(field)
    } else if (issue._tag === "Unexpected" && top) {
      problems.unknown(field)
    } else {
      const value = valueAt(args, issue.path)
      const key = String(issue.path[0])
      // The offered JSON Schema words a plain type mismatch best; a refinement (a positive
      // number, a pattern) is worded by its own message.
      const expected = top && Object.hasOwn(properties, key) ? misfit(properties[key], value) : undefined
      problems.misfit(
        expected === undefined
          ? `args field '${field}' does not fit the tool's input: ${issue.message}`
          : doesNotFit(field, expected, value)
      )
    }
  }
  return problems.all()
}

/**
 * Whether `value` fits a schema made of keywords and literals only, as Effect's decode would
 * decide it; `undefined` when the schema has anything else (a refinement, a transformation...).
 */
const plainFits = (ast: SchemaAST.AST, value: unknown): boolean | undefined => {
  switch (ast._tag) {
    case "StringKeyword":
      return typeof value === "string"
    case "NumberKeyword":
      return typeof value === "number"
    case "BooleanKeyword":
      return typeof value === "boolean"
    case "Literal":
      return value === ast.literal
    case "UndefinedKeyword":
      return value === undefined
    case "UnknownKeyword":
    case "AnyKeyword":
      return true
    case "Union": {
      // A member that accepts decides it, as it does for Effect's union.
      for (const member of ast.types) {
        const fits = plainFits(member, value)
        if (fits !== false) return fits
      }
      return false
    }
    default:
      return undefined
  }
}

/**
 * Whether `args` fit a struct of plain fields with no extra key, without running a decode: most
 * tools' inputs are such structs, and boot checks every example of thousands of plugins.
 * `undefined` when the schema is not such a struct.
 */
const fitsPlainStruct = (ast: SchemaAST.AST, args: Record<string, unknown>): boolean | undefined => {
  if (ast._tag !== "TypeLiteral" || ast.indexSignatures.length > 0) return undefined
  let fits = true
  let matched = 0
  for (const property of ast.propertySignatures) {
    if (typeof property.name !== "string") return undefined
    if (!Object.hasOwn(args, property.name)) {
      if (!property.isOptional) fits = false
      continue
    }
    matched++
    const fit = plainFits(property.type, args[property.name])
    if (fit === undefined) return undefined
    if (!fit) fits = false
  }
  return fits && matched === Object.keys(args).length
}

/**
 * True when `args` surely fit: they decode (stopping at the first issue, extra keys ignored) and
 * each key is one of the struct's. Cheaper than the full decode that words every
 * problem, which only a misfit pays for. A schema that is not a plain struct takes the full path.
 */
const fitsQuickly = (
  input: Schema.Schema<unknown, unknown, never>,
  parameters: JsonSchema,
  args: Record<string, unknown>
): boolean => {
  const properties = parameters.properties
  if (!isRecord(properties) || parameters.additionalProperties !== false) return false
  for (const key in args) if (!Object.hasOwn(properties, key)) return false
  return Either.isRight(Schema.decodeUnknownEither(input)(args))
}

/** The problems of one example's args against its tool; never throws. */
export const argsProblems = (tool: CatalogTool, args: Record<string, unknown>): string[] => {
  try {
    // A resolved tool without a `jsonSchema` has an Effect Schema `input` (its JSON Schema was
    // derived from it), so `Schema.isSchema` need not be asked again.
    if (tool.tool.jsonSchema === undefined) {
      const input = tool.tool.input as Schema.Schema<unknown, unknown, never>
      const plain = fitsPlainStruct(input.ast, args)
      if (plain === true || (plain === undefined && fitsQuickly(input, tool.parameters, args))) return []
      return effectSchemaProblems(input, tool.parameters, args)
    }
    return jsonSchemaProblems(tool.parameters, args)
  } catch {
    // A schema whose decode throws is the tool's problem, reported when it is called.
    return []
  }
}

/**
 * Warns once per example field that does not fit its tool's input:
 * `Plugin '<name>' manifest examples[<i>] (<tool>): args field '<f>' does not fit the tool's
 * input: expected <type>, got <value>.`, `... args is missing required field '<f>'.` and
 * `... args has unknown field '<f>'.` Examples whose tool `toolNamed` does not know (reported elsewhere)
 * or without `args`, or whose `args` is not an object (a manifest error), are skipped.
 */
export const checkExampleArgs = (
  manifest: unknown,
  pluginName: string,
  toolNamed: (name: string) => CatalogTool | undefined,
  warnings: string[]
): void => {
  try {
    if (!isRecord(manifest)) return
    const examples = manifest.examples
    if (!Array.isArray(examples)) return
    const length = Math.min(examples.length, MAX_EXAMPLES)
    for (let i = 0; i < length; i++) {
      const example: unknown = examples[i]
      if (!isRecord(example) || typeof example.tool !== "string") continue
      const tool = toolNamed(example.tool)
      if (tool === undefined) continue
      // An example without `args` names the tool for a request and shows no call: nothing to check.
      const args = example.args
      if (!isRecord(args)) continue
      for (const problem of argsProblems(tool, args)) {
        warnings.push(
          `Plugin '${shown(pluginName)}' manifest examples[${i}] (${shown(example.tool)}): ${problem}.`
        )
      }
    }
  } catch {
    // A hostile manifest (throwing getters): the manifest rules report it.
  }
}
