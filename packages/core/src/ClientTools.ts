/**
 * Client-side tools (seed 004's `browserTools` and `agActions`): tools the client sends with a
 * message, offered to the model for that turn and run by the client, not the server.
 *
 * The rules: each needs a name a provider accepts, a description, and a JSON Schema of its
 * arguments that is structurally valid (an object schema; see `checkSchema`); its name must not
 * be a meta-tool's, a catalog tool's (whatever its visibility: a client must not shadow a plugin),
 * nor another client tool's of the same request. They are offered after every server tool
 * (`Offer.offer`'s `extra`, last), so the prefix a provider caches stays the same turn to turn.
 */
import { Data, Either } from "effect"
import type { Catalog } from "./Catalog.js"
import type { AgActionDto, BrowserToolCallDto } from "./GraphState.js"
import * as MetaTools from "./MetaTools.js"
import type { OfferedTool } from "./Offer.js"

/** `browser`: a tool of the client's page (`browserTools`); `action`: an AG-UI action (`agActions`). */
export type ClientToolKind = "browser" | "action"

/** A checked client tool and what the model is offered for it. */
export interface ClientTool {
  readonly kind: ClientToolKind
  readonly name: string
  readonly description: string
  readonly schema: Readonly<Record<string, unknown>>
  /** Offered as a per-request tool with no plugin. */
  readonly offered: OfferedTool
}

/** Why a client tool was refused. */
export type ClientToolErrorReason =
  | "invalid-tool"
  | "invalid-name"
  | "invalid-schema"
  | "name-collision"
  | "duplicate-name"

/** A client tool is refused; `tool` names it (or its position when it has no usable name). */
export class ClientToolError extends Data.TaggedError("ClientToolError")<{
  readonly reason: ClientToolErrorReason
  readonly tool: string
  readonly message: string
}> {}

/** Names providers accept for a tool (OpenAI's rule, the strictest of the supported providers). */
export const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/

/** Most client tools accepted in one request (browser tools and actions together). */
export const MAX_CLIENT_TOOLS = 128

/** Deepest nesting a client schema may have (a bound on the check's work). */
const MAX_DEPTH = 32

const JSON_TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"])

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Problems of one (sub)schema at `path`; empty when structurally valid. */
const schemaProblem = (schema: unknown, path: string, depth: number): string | undefined => {
  if (depth > MAX_DEPTH) return `${path} nests deeper than ${MAX_DEPTH} levels`
  if (typeof schema === "boolean") return undefined
  if (!isRecord(schema)) return `${path} must be a JSON Schema object`
  const type = schema.type
  if (type !== undefined) {
    const types = Array.isArray(type) ? type : [type]
    if (types.length === 0 || !types.every((t) => typeof t === "string" && JSON_TYPES.has(t)))
      return `${path}.type must be one of ${[...JSON_TYPES].join(", ")} (or a list of them)`
  }
  if (schema.properties !== undefined) {
    if (!isRecord(schema.properties)) return `${path}.properties must be an object of schemas`
    for (const [key, sub] of Object.entries(schema.properties)) {
      if (!isRecord(sub) && typeof sub !== "boolean")
        return `${path}.properties.${key} must be a JSON Schema object`
      const problem = schemaProblem(sub, `${path}.properties.${key}`, depth + 1)
      if (problem !== undefined) return problem
    }
  }
  if (schema.required !== undefined) {
    if (!Array.isArray(schema.required) || !schema.required.every((r) => typeof r === "string"))
      return `${path}.required must be a list of property names`
  }
  if (schema.items !== undefined) {
    const items = Array.isArray(schema.items) ? schema.items : [schema.items]
    for (const [i, sub] of items.entries()) {
      const problem = schemaProblem(
        sub,
        Array.isArray(schema.items) ? `${path}.items[${i}]` : `${path}.items`,
        depth + 1
      )
      if (problem !== undefined) return problem
    }
  }
  if (schema.enum !== undefined && (!Array.isArray(schema.enum) || schema.enum.length === 0))
    return `${path}.enum must be a non-empty list`
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const list = schema[key]
    if (list === undefined) continue
    if (!Array.isArray(list) || list.length === 0) return `${path}.${key} must be a non-empty list of schemas`
    for (const [i, sub] of list.entries()) {
      const problem = schemaProblem(sub, `${path}.${key}[${i}]`, depth + 1)
      if (problem !== undefined) return problem
    }
  }
  if (schema.additionalProperties !== undefined) {
    const problem = schemaProblem(schema.additionalProperties, `${path}.additionalProperties`, depth + 1)
    if (problem !== undefined) return problem
  }
  return undefined
}

/**
 * Checks a client tool's argument schema: a JSON Schema object whose `type` is `object`, whose
 * `properties` (when present) map names to schemas, and whose nested `type`, `required`,
 * `items`, `enum`, `anyOf`/`oneOf`/`allOf` and `additionalProperties` have the shapes JSON
 * Schema gives them. Returns what is wrong, or `undefined`. Not a full validator: it refuses
 * what a provider would reject or misread, without a validator dependency.
 */
export const checkSchema = (schema: unknown): string | undefined => {
  if (!isRecord(schema)) return "the schema must be a JSON Schema object"
  if (schema.type !== "object") return `the schema's type must be 'object' (the arguments are an object)`
  return schemaProblem(schema, "schema", 0)
}

/** A client's tool as sent: `schema` or `parameters` carries its JSON Schema. */
export interface ClientToolInput {
  readonly name?: unknown
  readonly description?: unknown
  readonly schema?: unknown
  readonly parameters?: unknown
  readonly [key: string]: unknown
}

const refuse = (reason: ClientToolErrorReason, tool: string, message: string) =>
  Either.left(new ClientToolError({ reason, tool, message }))

const shownName = (name: unknown, kind: ClientToolKind, index: number): string =>
  typeof name === "string" && name.length > 0 && name.length <= 100
    ? name
    : `${kind === "browser" ? "tools" : "agActions"}[${index}]`

const checkOne = (
  input: unknown,
  kind: ClientToolKind,
  index: number,
  taken: ReadonlySet<string>,
  catalog: Catalog
): Either.Either<ClientTool, ClientToolError> => {
  const label = kind === "browser" ? "Client tool" : "Client action"
  if (!isRecord(input)) {
    const where = shownName(undefined, kind, index)
    return refuse(
      "invalid-tool",
      where,
      `${label} ${where} must be an object with name, description and schema.`
    )
  }
  const name = shownName(input.name, kind, index)
  if (typeof input.name !== "string" || !NAME_PATTERN.test(input.name)) {
    return refuse(
      "invalid-name",
      name,
      `${label} '${name}': the name must be 1 to 64 letters, digits, '_' or '-'.`
    )
  }
  if (typeof input.description !== "string" || input.description.trim().length === 0) {
    return refuse("invalid-tool", name, `${label} '${name}' needs a description (a non-empty string).`)
  }
  const schema = input.schema ?? input.parameters
  const problem = checkSchema(schema)
  if (problem !== undefined) {
    return refuse("invalid-schema", name, `${label} '${name}' has an invalid JSON Schema: ${problem}.`)
  }
  if (MetaTools.definitions.some((t) => t.name === name) || catalog.toolsByName.has(name)) {
    const owner = catalog.toolsByName.get(name)?.plugin
    return refuse(
      "name-collision",
      name,
      `${label} '${name}' has the name of ${owner === undefined ? "a runtime meta-tool" : `a tool of plugin '${owner}'`}; rename it.`
    )
  }
  if (taken.has(name)) {
    return refuse(
      "duplicate-name",
      name,
      `${label} '${name}' is given twice; client tool names must be unique.`
    )
  }
  const parameters = schema as Readonly<Record<string, unknown>>
  return Either.right({
    kind,
    name,
    description: input.description,
    schema: parameters,
    offered: { name, description: input.description, parameters, kind: "request" }
  })
}

/**
 * Checks a request's client tools against the catalog: browser tools first, then actions (one
 * name space for both). The first refused tool is the error; nothing is accepted partly.
 */
export const validate = (
  catalog: Catalog,
  input: {
    readonly tools?: ReadonlyArray<unknown> | undefined
    readonly agActions?: ReadonlyArray<unknown> | undefined
  }
): Either.Either<ReadonlyArray<ClientTool>, ClientToolError> => {
  const all: Array<[unknown, ClientToolKind, number]> = [
    ...(input.tools ?? []).map((t, i) => [t, "browser", i] as [unknown, ClientToolKind, number]),
    ...(input.agActions ?? []).map((t, i) => [t, "action", i] as [unknown, ClientToolKind, number])
  ]
  if (all.length > MAX_CLIENT_TOOLS) {
    return refuse(
      "invalid-tool",
      "tools",
      `At most ${MAX_CLIENT_TOOLS} client tools and actions per request, got ${all.length}.`
    )
  }
  const out: Array<ClientTool> = []
  const taken = new Set<string>()
  for (const [tool, kind, index] of all) {
    const checked = checkOne(tool, kind, index, taken, catalog)
    if (Either.isLeft(checked)) return Either.left(checked.left)
    taken.add(checked.right.name)
    out.push(checked.right)
  }
  return Either.right(out)
}

/** The state's DTO of a checked tool (`browserTools` / `agActions` entries). */
export const toDto = (tool: ClientTool): BrowserToolCallDto & AgActionDto => ({
  name: tool.name,
  description: tool.description,
  schema: tool.schema
})
