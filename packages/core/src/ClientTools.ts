/**
 * Client-side tools (`browserTools` and `agActions`, docs/spec/wire.md#client-side-tools): tools the client sends with a
 * message, offered to the model for that turn and run by the client, not the server.
 *
 * The rules: each needs a name a provider accepts, a description, and a valid JSON Schema of its
 * arguments: an object schema within bounds (`checkShape`, here), valid as JSON Schema (the
 * injected `SchemaChecker`: core is pure and has no validator; the Node host gives it Ajv). Its
 * name must not be one the server could offer in that turn, whatever the visibility (the name
 * space is flat, a client must not shadow a plugin): a meta-tool's, a catalog tool's, a sub-agent's,
 * or a tool of the request's own `getRequestTools` / `getRequestSubAgents`; nor another client
 * tool's of the same request. They are offered after every server tool (`Offer.offer`'s `extra`,
 * last), so the prefix a provider caches stays the same turn to turn.
 */
import { Data, Either } from "effect"
import { describe } from "./Describe.js"
import type { AgActionDto, BrowserToolCallDto } from "./GraphState.js"
import { objectSchemaProblem } from "./internal/argumentsSchema.js"
import type { Catalog } from "./internal/catalog/model.js"
import { META_TOOL_NAMES } from "./internal/metaTools.js"
import type { OfferedTool } from "./internal/offered.js"
import type { ToolSpec } from "./ToolSpec.js"

/** `browser`: a tool of the client's page (`browserTools`); `action`: an AG-UI action (`agActions`). */
export type ClientToolKind = "browser" | "action"

/**
 * A checked client tool: its spec (the JSON Schema the client sent as `schema` or `parameters`),
 * its kind, and what the model is offered for it.
 */
export interface ClientTool extends ToolSpec {
  readonly kind: ClientToolKind
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

/** Deepest nesting a client schema may have: bounds the work (and the stack) of any checker. */
export const MAX_SCHEMA_DEPTH = 32

/** Most JSON values (objects, arrays, scalars) one client schema may hold. */
export const MAX_SCHEMA_NODES = 2_000

/**
 * Most JSON values all client schemas of one request may hold together. Compiling a JSON Schema
 * costs time roughly in proportion to its size, so this bounds what one request can cost.
 */
export const MAX_REQUEST_SCHEMA_NODES = 8_000

/**
 * Checks a tool's argument schema as JSON Schema (the injected validator): what is wrong, for the
 * client to read, or `undefined`. It only ever sees a schema `checkShape` accepted (an object
 * schema within the depth and size bounds), and may throw (the tool is then refused).
 */
export type SchemaChecker = (schema: Readonly<Record<string, unknown>>) => string | undefined

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * How many JSON values `value` holds, or what bound it breaks. Iterative, and it stops at the
 * first bound broken, so a hostile input costs at most `MAX_SCHEMA_NODES` steps.
 */
const measure = (value: unknown): { readonly nodes: number } | { readonly problem: string } => {
  const stack: Array<[unknown, number]> = [[value, 0]]
  let nodes = 0
  while (stack.length > 0) {
    const [next, depth] = stack.pop()!
    if (++nodes > MAX_SCHEMA_NODES)
      return { problem: `the schema holds more than ${MAX_SCHEMA_NODES} values` }
    if (typeof next !== "object" || next === null) continue
    if (depth >= MAX_SCHEMA_DEPTH)
      return { problem: `the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels` }
    const children = Array.isArray(next) ? next : Object.values(next)
    if (nodes + stack.length + children.length > MAX_SCHEMA_NODES)
      return { problem: `the schema holds more than ${MAX_SCHEMA_NODES} values` }
    for (const child of children) stack.push([child, depth + 1])
  }
  return { nodes }
}

const shape = (schema: unknown): { readonly nodes: number } | { readonly problem: string } => {
  // The rule of every tool's arguments, a TypeScript plugin's too; the bounds are for schemas from outside.
  const problem = objectSchemaProblem(schema)
  return problem === undefined ? measure(schema) : { problem }
}

/**
 * The part of the schema rule core owns, before any JSON Schema validator runs: the schema is an
 * object whose `type` is `object` (the arguments are an object; providers require it), at most
 * `MAX_SCHEMA_DEPTH` deep and `MAX_SCHEMA_NODES` values big. Returns what is wrong, or
 * `undefined`. Whether it is valid JSON Schema is the injected `SchemaChecker`'s to say.
 */
export const checkShape = (schema: unknown): string | undefined => {
  const checked = shape(schema)
  return "problem" in checked ? checked.problem : undefined
}

/** A client's tool as sent: `schema` or `parameters` carries its JSON Schema. */
export interface ClientToolInput {
  readonly name?: unknown
  readonly description?: unknown
  readonly schema?: unknown
  readonly parameters?: unknown
  readonly [key: string]: unknown
}

/** A tool that exists for this request only (`getRequestTools`, a sub-agent): its name is taken. */
export interface ReservedTool {
  readonly plugin: string
  readonly offered: { readonly name: string }
  readonly kind?: "request-tool" | "sub-agent" | undefined
}

/** Options of `validate`. */
export interface ValidateOptions {
  /** The JSON Schema check (the host's validator; core has none, being pure). */
  readonly checkSchema: SchemaChecker
  /**
   * The request's own tools, whose names are reserved besides the catalog's: its `getRequestTools`
   * tools and its sub-agents (boot-time ones may be repeated here; they are reserved anyway).
   */
  readonly requestTools?: ReadonlyArray<ReservedTool> | undefined
}

const refuse = (reason: ClientToolErrorReason, tool: string, message: string) =>
  Either.left(new ClientToolError({ reason, tool, message }))

const shownName = (name: unknown, kind: ClientToolKind, index: number): string =>
  typeof name === "string" && name.length > 0 && name.length <= 100
    ? name
    : `${kind === "browser" ? "tools" : "agActions"}[${index}]`

const labelOf = (kind: ClientToolKind) => (kind === "browser" ? "Client tool" : "Client action")

const META_TOOLS: ReadonlySet<string> = new Set(META_TOOL_NAMES)

/**
 * Who owns `name` among the tools the server could offer in this turn, described for the client,
 * or `undefined` when the name is free. The name space is flat: a tool of a silent plugin or of a
 * plugin not loaded takes its name as much as one offered now.
 */
const ownerOf = (
  catalog: Catalog,
  requestTools: ReadonlyMap<string, ReservedTool>,
  name: string
): string | undefined => {
  if (META_TOOLS.has(name)) return "a runtime meta-tool"
  const tool = catalog.toolsByName.get(name)
  if (tool !== undefined) return `a tool of plugin '${tool.plugin}'`
  const subAgent = catalog.index.bootSubAgents.get(name)
  if (subAgent !== undefined) return `a sub-agent of plugin '${subAgent}'`
  const dynamic = requestTools.get(name)
  if (dynamic === undefined) return undefined
  return dynamic.kind === "sub-agent"
    ? `a sub-agent of plugin '${dynamic.plugin}'`
    : `a per-request tool of plugin '${dynamic.plugin}'`
}

/** A tool that passed every check but the JSON Schema one. */
interface Candidate {
  readonly tool: ClientTool
  readonly nodes: number
}

/** The checks that need no validator: shape, name, description, bounds, name clashes. */
const precheck = (
  input: unknown,
  kind: ClientToolKind,
  index: number,
  taken: ReadonlySet<string>,
  catalog: Catalog,
  requestTools: ReadonlyMap<string, ReservedTool>
): Either.Either<Candidate, ClientToolError> => {
  const label = labelOf(kind)
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
  const size = shape(schema)
  if ("problem" in size) {
    return refuse("invalid-schema", name, `${label} '${name}' has an invalid JSON Schema: ${size.problem}.`)
  }
  const owner = ownerOf(catalog, requestTools, name)
  if (owner !== undefined) {
    return refuse("name-collision", name, `${label} '${name}' has the name of ${owner}; rename it.`)
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
    nodes: size.nodes,
    tool: {
      kind,
      name,
      description: input.description,
      parameters,
      offered: { name, description: input.description, parameters, kind: "request" }
    }
  })
}

/** The injected JSON Schema check of one tool; a checker that throws refuses the tool too. */
const schemaCheck = (tool: ClientTool, checkSchema: SchemaChecker): ClientToolError | undefined => {
  let problem: string | undefined
  try {
    problem = checkSchema(tool.parameters)
  } catch (error) {
    problem = `it could not be checked (${describe(error)})`
  }
  return problem === undefined
    ? undefined
    : new ClientToolError({
        reason: "invalid-schema",
        tool: tool.name,
        message: `${labelOf(tool.kind)} '${tool.name}' has an invalid JSON Schema: ${problem}.`
      })
}

/**
 * Checks a request's client tools: browser tools first, then actions (one name space for both).
 * A name may not be one the server could offer in this turn: a meta-tool's, a catalog tool's of
 * any visibility, a boot-time sub-agent's, or one of `options.requestTools`. Every tool's cheap
 * checks run before any schema is given to `options.checkSchema`, so a bad name never costs a
 * schema compilation. The first refused tool is the error; nothing is accepted partly.
 */
export const validate = (
  catalog: Catalog,
  input: {
    readonly tools?: ReadonlyArray<unknown> | undefined
    readonly agActions?: ReadonlyArray<unknown> | undefined
  },
  options: ValidateOptions
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
  if (all.length === 0) return Either.right([])
  const requestTools = new Map((options.requestTools ?? []).map((t) => [t.offered.name, t]))
  const out: Array<ClientTool> = []
  const taken = new Set<string>()
  let nodes = 0
  for (const [tool, kind, index] of all) {
    const checked = precheck(tool, kind, index, taken, catalog, requestTools)
    if (Either.isLeft(checked)) return Either.left(checked.left)
    nodes += checked.right.nodes
    if (nodes > MAX_REQUEST_SCHEMA_NODES) {
      const name = checked.right.tool.name
      return refuse(
        "invalid-schema",
        name,
        `${labelOf(kind)} '${name}': the client schemas of one request may hold at most ${MAX_REQUEST_SCHEMA_NODES} values together.`
      )
    }
    taken.add(checked.right.tool.name)
    out.push(checked.right.tool)
  }
  for (const tool of out) {
    const error = schemaCheck(tool, options.checkSchema)
    if (error !== undefined) return Either.left(error)
  }
  return Either.right(out)
}

/** The state's DTO of a checked tool (`browserTools` / `agActions` entries). */
export const toDto = (tool: ClientTool): BrowserToolCallDto & AgActionDto => ({
  name: tool.name,
  description: tool.description,
  schema: tool.parameters
})
