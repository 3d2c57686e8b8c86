/**
 * A faster `JSONSchema.make` for the shape nearly every tool input has: a `Schema.Struct` whose
 * fields are strings, numbers, booleans and literals (optional or not, with a description or a
 * title). Deriving 15,000 tool schemas through Effect's general walker took most of a
 * 5,000-plugin catalog build. Other field types are handed to Effect's own walker
 * (`JSONSchema.fromAST`, the function `make` runs on each field) and its result is reused for
 * every struct that shares that field schema, since many tools share argument types (a `Limit`,
 * an `Id`). Anything else about the struct (index signatures, annotations other than a
 * description or title, symbol keys, unions with `undefined` that are not a plain optional) goes
 * to `JSONSchema.make` itself, and so does every error, so messages are unchanged.
 *
 * The output is `JSONSchema.make`'s, without `$schema`: same keys, same order (table- and
 * property-tested against it in packages/core/test/runtime/jsonSchema.test.ts).
 */
import { SchemaAST as AST, JSONSchema, type Schema } from "effect"

type Json = Record<string, unknown>

const DESCRIPTION = AST.DescriptionAnnotationId
const TITLE = AST.TitleAnnotationId

/** True when `annotations` hold nothing but a string description and/or title. */
const onlyDescriptionOrTitle = (annotations: AST.Annotations): boolean => {
  if (Object.keys(annotations).length > 0) return false
  for (const key of Object.getOwnPropertySymbols(annotations)) {
    if (key !== DESCRIPTION && key !== TITLE) return false
    if (typeof annotations[key] !== "string") return false
  }
  return true
}

/** `{description?, title?}` in that order, or undefined when there is neither. */
const descriptionAndTitle = (
  description: unknown,
  title: unknown
): { description?: unknown; title?: unknown } | undefined => {
  if (description === undefined && title === undefined) return undefined
  const out: { description?: unknown; title?: unknown } = {}
  if (description !== undefined) out.description = description
  if (title !== undefined) out.title = title
  return out
}

/** The built-in keyword a keyword node derives from (its default annotations are not emitted). */
const builtIn = (ast: AST.AST): AST.Annotations | undefined =>
  ast._tag === "StringKeyword"
    ? AST.stringKeyword.annotations
    : ast._tag === "NumberKeyword"
      ? AST.numberKeyword.annotations
      : ast._tag === "BooleanKeyword"
        ? AST.booleanKeyword.annotations
        : undefined

/** A field type this module derives itself, or undefined. */
const fastType = (ast: AST.AST): Json | undefined => {
  const base = builtIn(ast)
  if (base !== undefined) {
    if (!onlyDescriptionOrTitle(ast.annotations)) return undefined
    const description = ast.annotations[DESCRIPTION]
    const title = ast.annotations[TITLE]
    const type = ast._tag === "StringKeyword" ? "string" : ast._tag === "NumberKeyword" ? "number" : "boolean"
    return {
      type,
      ...descriptionAndTitle(
        description !== base[DESCRIPTION] ? description : undefined,
        title !== base[TITLE] ? title : undefined
      )
    }
  }
  if (ast._tag === "Literal" && Object.getOwnPropertySymbols(ast.annotations).length === 0) {
    const literal = ast.literal
    if (literal === null) return { type: "null" }
    if (typeof literal === "string") return { type: "string", enum: [literal] }
    if (typeof literal === "number") return { type: "number", enum: [literal] }
    if (typeof literal === "boolean") return { type: "boolean", enum: [literal] }
  }
  return undefined
}

/** A field type Effect derives, with the definitions (`$defs`) it needs, in the order it adds them. */
interface Delegated {
  readonly json: Json
  readonly defs: Json
}
// A pure memo of what Effect derives for an AST node (ASTs are immutable): no catalog's state.
const delegated = new WeakMap<AST.AST, Delegated>()

/** A fresh deep copy of JSON data, so no two tools' parameters share mutable objects. */
const copy = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return value
  if (Array.isArray(value)) return value.map(copy)
  const out: Json = {}
  for (const key of Object.keys(value)) out[key] = copy((value as Json)[key])
  return out
}

const delegate = (ast: AST.AST): Delegated => {
  let d = delegated.get(ast)
  if (d === undefined) {
    const defs: Json = {}
    const json = JSONSchema.fromAST(ast, { definitions: defs as never }) as unknown as Json
    d = { json, defs }
    delegated.set(ast, d)
  }
  return d
}

/** Tags whose `undefined` pruning is trivial (nothing inside can be `undefined`). */
const plainTag = (ast: AST.AST): boolean =>
  ast._tag !== "Union" &&
  ast._tag !== "Suspend" &&
  ast._tag !== "Transformation" &&
  ast._tag !== "UndefinedKeyword"

/**
 * The field type after dropping `undefined` the way `JSONSchema.make` does, and whether it was
 * dropped; undefined when the shape is not one handled here.
 */
const pruned = (ast: AST.AST): { readonly type: AST.AST; readonly pruned: boolean } | undefined => {
  if (plainTag(ast)) return { type: ast, pruned: false }
  if (ast._tag !== "Union" || Object.getOwnPropertySymbols(ast.annotations).length > 0) return undefined
  const rest: Array<AST.AST> = []
  let undefinedSeen = false
  for (const member of ast.types) {
    if (member._tag === "UndefinedKeyword") undefinedSeen = true
    else if (plainTag(member)) rest.push(member)
    else return undefined
  }
  return undefinedSeen && rest.length === 1 ? { type: rest[0]!, pruned: true } : undefined
}

/** The struct's JSON Schema (without `$schema`), or undefined when it is not a handled shape. */
export const fastStruct = (ast: AST.AST): Json | undefined => {
  if (ast._tag !== "TypeLiteral") return undefined
  if (ast.indexSignatures.length > 0 || ast.propertySignatures.length === 0) return undefined
  if (!onlyDescriptionOrTitle(ast.annotations)) return undefined
  const defs: Json = {}
  const required: Array<string> = []
  const properties: Json = {}
  for (const ps of ast.propertySignatures) {
    const name = ps.name
    // `__proto__` is left to `JSONSchema.make`, whose plain assignment treats it specially.
    if (typeof name !== "string" || name === "__proto__" || !onlyDescriptionOrTitle(ps.annotations))
      return undefined
    const field = pruned(ps.type)
    if (field === undefined) return undefined
    let json = fastType(field.type)
    if (json === undefined) {
      const d = delegate(field.type)
      for (const id of Object.keys(d.defs)) if (!Object.hasOwn(defs, id)) defs[id] = copy(d.defs[id])
      json = copy(d.json) as Json
    }
    const context = descriptionAndTitle(ps.annotations[DESCRIPTION], ps.annotations[TITLE])
    if (context !== undefined) json = "$ref" in json ? { allOf: [json], ...context } : { ...json, ...context }
    properties[name] = json
    if (!ps.isOptional && !field.pruned) required.push(name)
  }
  const out: Json = {}
  if (Object.keys(defs).length > 0) out.$defs = defs
  out.type = "object"
  out.required = required
  out.properties = properties
  out.additionalProperties = false
  const own = descriptionAndTitle(ast.annotations[DESCRIPTION], ast.annotations[TITLE])
  return own === undefined ? out : { ...out, ...own }
}

/**
 * `JSONSchema.make(schema)` without its `$schema` key: derived here for the common struct
 * shapes, by `JSONSchema.make` for everything else. Throws what `JSONSchema.make` throws.
 */
export const jsonSchemaOf = (schema: Schema.Schema.All): Json => {
  try {
    const fast = fastStruct(schema.ast)
    if (fast !== undefined) return fast
  } catch {
    // Fall through: `JSONSchema.make` reports the error in its own words.
  }
  const { $schema: _drop, ...rest } = JSONSchema.make(
    schema as Schema.Schema<unknown, unknown, never>
  ) as unknown as Json
  return rest
}
