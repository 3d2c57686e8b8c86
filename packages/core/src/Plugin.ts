/**
 * The shape of a plugin: a kebab-case name, a manifest, tools and hooks (docs/spec/catalog.md#a-plugin).
 * `definePlugin` only checks what a type cannot (the name); everything that needs the whole
 * catalog (collisions, dependencies, manifest rules) is checked when the catalog is built.
 */
import { Data, type Schema } from "effect"
import type { PluginStateUpdate } from "./GraphState.js"
import type { Capability } from "./internal/capability.js"
import type { PluginSource } from "./internal/pluginSource.js"
import type { PluginManifest, Visibility } from "./PluginManifest.js"
import type { RuntimeContext } from "./RuntimeContext.js"

/** JSON Schema for a tool's input, as providers receive it. */
export type JsonSchema = Readonly<Record<string, unknown>>

/**
 * What a tool's `input` must decode to, for tsc: an object that is not iterable (the model sends
 * a tool's arguments as one JSON object), so `Schema.String`, `Schema.Number` or
 * `Schema.Array(...)` as an input is a type error. A type cannot see everything: a union of
 * structs, a `Schema.Struct` field with no JSON form (`Schema.DateFromSelf`) or a `jsonSchema`
 * that is not an object schema type-check, and `Catalog.make` refuses them at boot (and
 * `plugboard inspect` reports them), naming the plugin, the tool and the field
 * (docs/plugins.md#6-what-boot-checks).
 */
export interface ObjectInput {
  readonly Type: object & { readonly [Symbol.iterator]?: never }
}

/** A tool a plugin registers. `input` validates arguments before the handler runs. */
// biome-ignore lint/suspicious/noExplicitAny: a plugin's tool list is heterogeneous; defineTool keeps each tool typed
export interface PluginTool<A = any, I = any> {
  readonly name: string
  readonly description: string
  /**
   * Effect Schema of the arguments, an object (`Schema.Struct`, `ObjectInput`); the JSON Schema
   * offered to the model is derived from it.
   */
  readonly input: Schema.Schema<A, I, never> & ObjectInput
  /** Overrides the JSON Schema derived from `input` (for schemas Effect cannot express). */
  readonly jsonSchema?: JsonSchema
  /** Overrides the plugin's visibility for this tool only (docs/spec/tiers.md#per-tool-override). */
  readonly visibility?: Visibility
  /**
   * UCAN capabilities a user must hold for this tool to be offered to them, on top of the
   * plugin's (`Access`): a user without them is never offered the tool nor told it exists.
   */
  readonly requires?: ReadonlyArray<Capability>
  /**
   * The tool runs only once its user approved the call: the turn stops before it and waits
   * (`Approval.ts`, docs/waiting.md). The operator can require it for other tools too
   * (`APPROVAL_TOOLS`).
   */
  readonly requiresApproval?: boolean
  /**
   * The tool's source says it may destroy or overwrite things (an MCP tool's
   * `annotations.destructiveHint: true`): it waits for approval like `requiresApproval`, unless
   * the operator turned that off (`APPROVAL_MCP_DESTRUCTIVE=off`).
   */
  readonly destructiveHint?: boolean
  readonly handler: (input: A, context: RuntimeContext) => unknown
}

/** A sub-agent exposed to the main agent as a tool. `init` failures are logged and skipped. */
export interface SubAgentSpec {
  readonly name: string
  readonly description: string
  /** Prepares the sub-agent for this request; a rejection skips it for the turn. */
  readonly init?: (context: RuntimeContext) => Promise<void> | void
  /** Answers a task delegated by the main agent. */
  readonly run: (task: string, context: RuntimeContext) => Promise<string> | string
}

/** A model call as middleware sees it, provider-neutral. */
export interface ModelCall {
  readonly system: string
  readonly messages: ReadonlyArray<unknown>
  readonly tools: ReadonlyArray<{ readonly name: string }>
}

/** A model answer as middleware sees it. `usage` is in tokens when the provider reports it. */
export interface ModelResult {
  readonly message: unknown
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number } | undefined
}

/**
 * What `beforeModel` / `afterModel` may return: nothing, or a partial update of the fields
 * plugins own (`GraphState.PLUGIN_WRITABLE_FIELDS`), merged by their reducers and checkpointed
 * with the thread (docs/spec/graph-state.md#what-plugins-may-write: a Memory plugin writes
 * `userContext` from its middleware).
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a hook that returns nothing is the common case
export type MiddlewareResult = PluginStateUpdate | void | undefined

/** Hooks around each model invocation, run in catalog order. */
export interface PluginMiddleware {
  readonly name?: string
  readonly beforeModel?: (
    call: ModelCall,
    context: RuntimeContext
  ) => Promise<MiddlewareResult> | MiddlewareResult
  readonly afterModel?: (
    result: ModelResult,
    context: RuntimeContext
  ) => Promise<MiddlewareResult> | MiddlewareResult
  /**
   * Sees a model error. Return `{ recover: message }` to answer with a message instead;
   * return nothing (or a `recover` of `undefined` / `null`) to let the error propagate to the
   * client (the default).
   */
  readonly onError?: (
    error: unknown,
    context: RuntimeContext
  ) => Promise<{ readonly recover: unknown } | undefined> | { readonly recover: unknown } | undefined
}

/** An HTTP route a plugin contributes (docs/spec/wire.md#plugin-routes). */
export interface PluginRoute {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  /** Path under the server root, e.g. `/weather/stations`. */
  readonly path: string
  /** Public routes skip the auth/credits/limit pipeline. */
  readonly public?: boolean
  readonly handler: (request: PluginRouteRequest) => Promise<PluginRouteResponse> | PluginRouteResponse
}

/** A request to a plugin route, after the pipeline ran. */
export interface PluginRouteRequest {
  readonly method: string
  readonly path: string
  /** The route's `:param` segments, URL-decoded (`/stations/:id` → `{ id }`). */
  readonly params: Readonly<Record<string, string>>
  readonly query: Readonly<Record<string, string>>
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
  /** The authenticated user, absent on public routes. */
  readonly userDid?: string | undefined
  readonly shared: Readonly<Record<string, unknown>>
}

/** A plugin route's answer; `body` is sent as JSON. */
export interface PluginRouteResponse {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: unknown
}

/** Per-request inputs to `getRequestTools` / `getRequestSubAgents`. */
export interface RequestInfo {
  readonly userDid: string
  readonly sessionId: string
  readonly shared: Readonly<Record<string, unknown>>
}

/** A plugin: name, manifest, tools and hooks (docs/spec/catalog.md#a-plugin). */
export interface Plugin {
  /** Kebab-case unique identifier. */
  readonly name: string
  readonly manifest: PluginManifest
  readonly tools?: ReadonlyArray<PluginTool>
  /** Names of plugins that must boot before this one. */
  readonly dependsOn?: ReadonlyArray<string>
  /** Extra prose appended to the system prompt while the plugin is offered. */
  readonly prompt?: string
  /** Tools computed once at boot, added to `tools`. */
  readonly getTools?: () => ReadonlyArray<PluginTool>
  readonly getSubAgents?: () => ReadonlyArray<SubAgentSpec>
  readonly getMiddlewares?: () => ReadonlyArray<PluginMiddleware>
  /** Read once at boot, cached, exposed as `context.shared[key]`. */
  readonly getSharedState?: () =>
    | Readonly<Record<string, unknown>>
    | Promise<Readonly<Record<string, unknown>>>
  /** Per-request tools; they follow the plugin's visibility. */
  readonly getRequestTools?: (
    request: RequestInfo
  ) => ReadonlyArray<PluginTool> | Promise<ReadonlyArray<PluginTool>>
  readonly getRequestSubAgents?: (
    request: RequestInfo
  ) => ReadonlyArray<SubAgentSpec> | Promise<ReadonlyArray<SubAgentSpec>>
  readonly middlewares?: ReadonlyArray<PluginMiddleware>
  readonly routes?: ReadonlyArray<PluginRoute>
  /**
   * How to use the plugin, returned by `load_capability` with its manifest (a skill's body).
   * Counted in what the plugin costs when loaded.
   */
  readonly operatingGuide?: string
  /**
   * Set when the plugin cannot be used (an MCP server unreachable at boot with nothing cached):
   * why, in a sentence. It is listed as unavailable and `load_capability` refuses it with this.
   */
  readonly unavailable?: string
  /** Where a derived plugin came from (`CatalogSource`); absent for a TypeScript plugin. */
  readonly source?: PluginSource
  /**
   * UCAN capabilities a user must hold to use the plugin (`Access`, README "Requiring
   * capabilities"). A user without them sees it listed as unavailable with the reason, is refused
   * by `load_capability`, and is offered none of its tools, always-tier ones included.
   */
  readonly requires?: ReadonlyArray<Capability>
}

const KEBAB_CASE = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/

/** True when `name` is a valid plugin name (kebab-case, starts with a letter). */
export const isPluginName = (name: string): boolean => typeof name === "string" && KEBAB_CASE.test(name)

/**
 * Thrown by `definePlugin` for a name that is not kebab-case. Thrown, not failed: `definePlugin`
 * is plain code; a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
 */
export class InvalidPluginNameError extends Data.TaggedError("InvalidPluginNameError")<{
  readonly pluginName: string
  readonly message: string
}> {
  constructor(pluginName: string) {
    super({
      pluginName,
      message: `Plugin name '${String(pluginName)}' is not kebab-case (lowercase letters, digits and single dashes).`
    })
  }
}

/**
 * Maps every key of `P` that `Known` does not declare to `never`, so an object literal with a
 * misplaced or misspelt key (`visibility` outside `manifest`, say) is a type error naming it.
 * A generic parameter escapes TypeScript's own excess-property check; this restores it.
 */
export type OnlyKnownKeys<P, Known> = { readonly [K in Exclude<keyof P, keyof Known>]: never }

/**
 * Declares a plugin. Typed identity plus the one check that needs no catalog: the name.
 * Manifest rules, tool collisions and dependencies are checked by `Catalog.make`.
 */
export const definePlugin = <const P extends Plugin>(plugin: P & OnlyKnownKeys<P, Plugin>): P => {
  if (!isPluginName(plugin.name)) throw new InvalidPluginNameError(plugin.name)
  return plugin
}

/** Declares a tool with its argument type inferred from `input`. */
export const defineTool = <A, I>(tool: PluginTool<A, I>): PluginTool<A, I> => tool
