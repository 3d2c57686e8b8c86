/**
 * `call_tool`, the third meta-tool (docs/spec/meta-tools.md#call_tool), and what a door whose
 * client keeps the tool list itself offers and answers.
 *
 * Why a third meta-tool: an MCP client holds the server's tool list and shows its model only
 * that. A load appends tools to the server's list and announces it (`tools/list_changed`), but
 * many clients never read the list again, so their model would never see a loaded tool. Through
 * `call_tool` such a model calls the tool by name anyway, and the call goes through the same gate
 * as any other (`ToolCall.plan`): a tool of a plugin not loaded is refused with core's message.
 * For the model to know the arguments, a load answered in such a door also carries each tool's
 * input schema, and the plugin's `prompt` section, which a door with a system prompt would have
 * added to it (`loadAnswer`).
 *
 * The LangGraph loop never offers it: there, what is loaded is offered on the next model call.
 */
import { Either } from "effect"
import * as Access from "./Access.js"
import type { Catalog } from "./internal/catalog/model.js"
import { parseJsonObject } from "./internal/json.js"
import { CALL_TOOL, callToolDefinition, META_TOOL_NAMES } from "./internal/metaTools.js"
import type { OfferedTool } from "./internal/offered.js"
import { section } from "./internal/promptSections.js"
import { shown } from "./internal/text.js"
import type * as LoadedPlugins from "./LoadedPlugins.js"
import { type LoadCapabilityResult, MetaToolInputError } from "./MetaTools.js"
import * as Offer from "./Offer.js"

export { callToolDefinition as definition } from "./internal/metaTools.js"

/** How many meta-tools lead the offer of a door with `call_tool`. */
export const META_TOOLS_OFFERED = 3

/**
 * The offer of a door whose client keeps the tool list (docs/spec/tiers.md#the-offer): core's
 * offer (`Offer.offer`) with `call_tool` right after the two other meta-tools. The order is
 * core's, so a load only appends and the list a client holds is a prefix of the next one.
 */
export const offer = (
  catalog: Catalog,
  loadedPlugins: LoadedPlugins.LoadedPlugins,
  view: Access.View = Access.view(catalog)
): ReadonlyArray<OfferedTool> => {
  const base = Offer.offer(catalog, loadedPlugins, [], view)
  const out: Array<OfferedTool> = new Array(base.length + 1)
  // The base offer starts with the two meta-tools, whatever the catalog holds.
  out[0] = base[0]!
  out[1] = base[1]!
  out[2] = callToolDefinition
  for (let i = 2; i < base.length; i++) out[i + 1] = base[i]!
  return out
}

// One listed schema per schema object: the offer's tools are shared, so each is rewritten once.
const listed = new WeakMap<Readonly<Record<string, unknown>>, Readonly<Record<string, unknown>>>()

/**
 * A tool's input schema as a client-held list carries it: MCP requires an object schema at the
 * root, so one without `type: "object"` (a union, say) gets it added. `TokenBudget.listCost`
 * prices this, so what `plugboard inspect` reports is what the gateway's list costs on the wire.
 */
export const listedSchema = (
  parameters: Readonly<Record<string, unknown>>
): Readonly<Record<string, unknown>> => {
  if (parameters.type === "object") return parameters
  let out = listed.get(parameters)
  if (out === undefined) {
    out = { ...parameters, type: "object" }
    listed.set(parameters, out)
  }
  return out
}

/** Whether an offer is one of a door with `call_tool` (its load answers carry the schemas). */
export const offersCallTool = (offered: ReadonlyArray<OfferedTool>): boolean => {
  // It is third when present; a scan covers an offer someone assembled otherwise.
  if (offered[2]?.name === CALL_TOOL && offered[2].kind === "meta") return true
  return offered.some((t) => t.name === CALL_TOOL && t.kind === "meta")
}

/** The arguments of `call_tool`. */
export interface CallToolInput {
  /** The tool to run, as offered. */
  readonly name: string
  /** Its arguments (`{}` when absent). */
  readonly arguments: Readonly<Record<string, unknown>>
}

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** A JSON string is parsed, as models sometimes send one (docs/spec/meta-tools.md). */
const asObject = (u: unknown): Record<string, unknown> | undefined =>
  u === undefined || u === null
    ? {}
    : typeof u === "string"
      ? parseJsonObject(u)
      : isRecord(u)
        ? u
        : undefined

const describe = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "an array" : typeof u)

const USAGE = `Call it as {"name": "<tool>", "arguments": {...}}.`

/**
 * Decodes `call_tool` arguments: `name`, a non-empty string, and `arguments`, an object (or a
 * JSON string of one; absent is `{}`). A name that is a meta-tool's is refused: those are called
 * directly, and `call_tool` never runs itself.
 */
export const decodeInput = (input: unknown): Either.Either<CallToolInput, MetaToolInputError> => {
  const fail = (message: string) =>
    Either.left(new MetaToolInputError({ reason: "invalid-input", tool: CALL_TOOL, message }))
  const o = asObject(input)
  if (o === undefined)
    return fail(`${CALL_TOOL} expects an object of arguments, got ${describe(input)}. ${USAGE}`)
  const name = typeof o.name === "string" ? o.name.trim() : undefined
  if (name === undefined || name === "") {
    return fail(`${CALL_TOOL}: 'name' must be the name of a tool (a string). ${USAGE}`)
  }
  const args = asObject(o.arguments)
  if (args === undefined) {
    return fail(`${CALL_TOOL}: 'arguments' must be an object, got ${describe(o.arguments)}. ${USAGE}`)
  }
  if (META_TOOL_NAMES.includes(name)) {
    return fail(`${CALL_TOOL} runs plugin tools; call ${shown(name, 100)} directly.`)
  }
  return Either.right({ name, arguments: args })
}

/**
 * The answer to `load_capability` in a door with `call_tool`: core's answer
 * (`MetaTools.formatToolMessage`, same keys, same order) where each loaded tool also carries its
 * `inputSchema` and each loaded plugin its `prompt` section, then, when something was loaded, a
 * `note` saying how to call a tool the client does not list yet.
 */
export const loadAnswer = (catalog: Catalog, result: LoadCapabilityResult): string => {
  const results = result.results.map((r) => {
    if (r.status !== "loaded") return r
    const entry = catalog.byName.get(r.name)
    const prompt = entry === undefined ? undefined : section(entry)
    return {
      ...r,
      tools: r.tools.map((t) => ({
        ...t,
        inputSchema: listedSchema(catalog.toolsByName.get(t.name)?.parameters ?? {})
      })),
      ...(prompt === undefined ? {} : { prompt })
    }
  })
  return JSON.stringify({
    ...(result.alreadyAvailable === true ? { alreadyAvailable: true } : {}),
    newlyLoaded: result.newlyLoaded,
    results,
    ...(result.newlyLoaded.length === 0
      ? {}
      : {
          note: `If a tool above is not in your tool list yet, call it through ${CALL_TOOL}: {"name": "<tool>", "arguments": {...}}.`
        })
  })
}
