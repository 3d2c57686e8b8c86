/**
 * The graph state of docs/spec/graph-state.md and its per-field reducers, as pure functions. The LangGraph
 * adapter wraps these; nothing else decides how an update merges.
 */
import { Either } from "effect"
import * as LoadedPlugins from "./LoadedPlugins.js"

/** The minimum a message needs for the messages reducer: an optional stable id. */
export interface StateMessage {
  readonly id?: string | undefined
  readonly [key: string]: unknown
}

/** Where the conversation comes from. */
export type Client = "portal" | "matrix" | "slack"

/** A client-side (browser) tool the portal offers for a turn. */
export interface BrowserToolCallDto {
  readonly name: string
  readonly description: string
  readonly schema: Readonly<Record<string, unknown>>
  readonly [key: string]: unknown
}

/** An AG-UI action the portal offers for a turn. */
export interface AgActionDto {
  readonly name: string
  readonly description: string
  readonly schema: Readonly<Record<string, unknown>>
  readonly [key: string]: unknown
}

/** The main agent's graph state (docs/spec/graph-state.md#channels). */
export interface GraphState<M extends StateMessage = StateMessage> {
  readonly messages: ReadonlyArray<M>
  readonly config: { readonly wsId?: string | undefined; readonly did: string }
  readonly client: Client
  readonly editorRoomId?: string | undefined
  readonly spaceId?: string | undefined
  readonly currentEntityDid?: string | undefined
  readonly browserTools?: ReadonlyArray<BrowserToolCallDto> | undefined
  readonly agActions?: ReadonlyArray<AgActionDto> | undefined
  readonly userContext: Readonly<Record<string, unknown>>
  readonly mcpUcanContext?: { readonly invocations: Readonly<Record<string, string>> } | undefined
  readonly userPreferences?: Readonly<Record<string, unknown>> | undefined
  readonly loadedPlugins: ReadonlyArray<string>
}

/** A partial update returned by a node. */
export type GraphStateUpdate<M extends StateMessage = StateMessage> = {
  readonly [K in keyof GraphState<M>]?: GraphState<M>[K]
}

/** A per-field reducer: how an update's value merges into the current one. */
export type Reducer<A> = (current: A, update: A) => A

/** One reducer per field of the state; the LangGraph adapter wraps each as a channel reducer. */
export type Reducers<M extends StateMessage = StateMessage> = {
  readonly [K in keyof GraphState<M>]-?: Reducer<GraphState<M>[K]>
}

/**
 * The messages reducer (LangGraph's `messagesStateReducer` without removals): update messages
 * are appended, except that one whose `id` is already present replaces that message in place.
 * Messages without an id are always appended. Within one update, a later duplicate id replaces
 * the earlier one.
 */
export const appendMessages = <M extends StateMessage>(
  current: ReadonlyArray<M>,
  update: ReadonlyArray<M>
): ReadonlyArray<M> => {
  if (update.length === 0) return current
  const merged = current.slice()
  // Only the ids the update carries can be replaced, so only they are indexed: a thread of
  // thousands of messages is then scanned, not copied into a map, on every update (the agent
  // loop applies one per step, and the ids it writes are almost always new).
  const updateIds = new Set<string>()
  for (const message of update) if (message.id !== undefined) updateIds.add(message.id)
  const indexById = new Map<string, number>()
  if (updateIds.size > 0) {
    for (let i = 0; i < merged.length; i++) {
      const id = merged[i]!.id
      if (id !== undefined && updateIds.has(id) && !indexById.has(id)) indexById.set(id, i)
    }
  }
  for (const message of update) {
    const id = message.id
    const at = id === undefined ? undefined : indexById.get(id)
    if (at !== undefined) {
      merged[at] = message
    } else {
      if (id !== undefined) indexById.set(id, merged.length)
      merged.push(message)
    }
  }
  return merged
}

/**
 * `appendMessages` over a batch of updates (each one message or an array of them), in one pass:
 * the same result as folding `appendMessages` over the batch, for any split of it into batches.
 * That is what lets the messages be stored as deltas (docs/benchmarks.md, conversation): each
 * checkpoint keeps only the messages its step wrote, and the thread is rebuilt by replaying the
 * stored writes as one batch, oldest first.
 */
export const appendMessageBatches = <M extends StateMessage>(
  current: ReadonlyArray<M>,
  writes: ReadonlyArray<M | ReadonlyArray<M>>
): ReadonlyArray<M> => {
  const update: Array<M> = []
  for (const w of writes) {
    if (Array.isArray(w)) for (const m of w as ReadonlyArray<M>) update.push(m)
    else update.push(w as M)
  }
  return appendMessages(current, update)
}

/** Shallow merge: the update's keys overwrite, the others are kept. `undefined` keeps the current value. */
export const mergeRecord = <R extends Readonly<Record<string, unknown>>>(current: R, update: R): R =>
  update === undefined ? current : current === undefined ? update : ({ ...current, ...update } as R)

/**
 * `mcpUcanContext`: the invocations are shallow-merged, so that one node adding an invocation
 * does not drop the others. An `undefined` update keeps the current value.
 */
export const mergeMcpUcanContext: Reducer<GraphState["mcpUcanContext"]> = (current, update) => {
  if (update === undefined) return current
  if (current === undefined) return update
  return { invocations: { ...current.invocations, ...update.invocations } }
}

/** Last write wins: the update's value replaces the current one (including `undefined`). */
export const lastWriteWins = <A>(_current: A, update: A): A => update

/** The reducer of every channel of docs/spec/graph-state.md#channels. */
export const reducers: Reducers = {
  messages: appendMessages,
  config: lastWriteWins,
  client: lastWriteWins,
  editorRoomId: lastWriteWins,
  spaceId: lastWriteWins,
  currentEntityDid: lastWriteWins,
  browserTools: lastWriteWins,
  agActions: lastWriteWins,
  userContext: mergeRecord,
  mcpUcanContext: mergeMcpUcanContext,
  userPreferences: lastWriteWins,
  loadedPlugins: LoadedPlugins.union
}

/** The state of a new thread: no messages, nothing loaded, empty user context. */
export const initial = <M extends StateMessage = StateMessage>(options: {
  readonly did: string
  readonly client: Client
  readonly wsId?: string | undefined
}): GraphState<M> => ({
  messages: [],
  config: options.wsId === undefined ? { did: options.did } : { did: options.did, wsId: options.wsId },
  client: options.client,
  userContext: {},
  loadedPlugins: LoadedPlugins.empty
})

const fields = Object.keys(reducers) as ReadonlyArray<keyof GraphState>

/**
 * Merges a node's partial update: each field the update has (as an own key) goes through its
 * reducer; fields it lacks are untouched. Keys that are not channels (docs/spec/graph-state.md) are ignored,
 * because the graph has no channel to keep them in.
 */
export const apply = <M extends StateMessage>(
  state: GraphState<M>,
  update: GraphStateUpdate<M>
): GraphState<M> => {
  const current = state as unknown as Record<string, unknown>
  const changes = update as unknown as Record<string, unknown>
  const next: Record<string, unknown> = { ...current }
  const rs = reducers as unknown as Record<string, Reducer<unknown>>
  for (const key of fields) {
    if (Object.hasOwn(changes, key)) next[key] = rs[key]!(current[key], changes[key])
  }
  return next as unknown as GraphState<M>
}

// ---------------------------------------------------------------------------------------------
// Plugin writes

/**
 * The fields a plugin's middleware may write (docs/spec/graph-state.md#what-plugins-may-write): `userContext`
 * (merged, as the Memory plugin's enrichment writes it), `userPreferences`, `editorRoomId`,
 * `spaceId`, `currentEntityDid` (last write wins). The others belong to the runtime
 * (`messages`, `config`, `client`, `loadedPlugins`, `mcpUcanContext`) or to the client
 * (`browserTools`, `agActions`).
 */
export const PLUGIN_WRITABLE_FIELDS = [
  "userContext",
  "userPreferences",
  "editorRoomId",
  "spaceId",
  "currentEntityDid"
] as const

/** A partial state update a plugin's middleware may return. */
export interface PluginStateUpdate {
  readonly userContext?: Readonly<Record<string, unknown>>
  readonly userPreferences?: Readonly<Record<string, unknown>> | undefined
  readonly editorRoomId?: string | undefined
  readonly spaceId?: string | undefined
  readonly currentEntityDid?: string | undefined
}

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const typeOf = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "an array" : typeof u)

/**
 * Checks what a middleware hook returned: nothing (no update), or an object of writable fields
 * with values of their types. Left: the message naming the plugin, the hook and the field.
 */
export const checkPluginUpdate = (
  value: unknown,
  source: { readonly plugin: string; readonly hook: string }
): Either.Either<PluginStateUpdate, string> => {
  const at = `Plugin '${source.plugin}' ${source.hook}`
  if (value === undefined || value === null) return Either.right({})
  if (!isPlainObject(value)) {
    return Either.left(`${at} returned ${typeOf(value)}; return nothing or an object of state fields.`)
  }
  for (const [key, field] of Object.entries(value)) {
    if (!(PLUGIN_WRITABLE_FIELDS as ReadonlyArray<string>).includes(key)) {
      return Either.left(
        `${at} returned a state update for '${key}', which plugins cannot write (writable: ${PLUGIN_WRITABLE_FIELDS.join(", ")}).`
      )
    }
    const ok =
      key === "userContext"
        ? isPlainObject(field)
        : key === "userPreferences"
          ? field === undefined || isPlainObject(field)
          : field === undefined || typeof field === "string"
    if (!ok) {
      const expected =
        key === "userContext"
          ? "an object"
          : key === "userPreferences"
            ? "an object or undefined"
            : "a string or undefined"
      return Either.left(`${at} returned '${key}' as ${typeOf(field)}; it must be ${expected}.`)
    }
  }
  return Either.right(value as PluginStateUpdate)
}

/**
 * Combines plugin updates in the order they were returned, by the fields' reducers, into one
 * update a node can return (which the channels then merge into the state the same way).
 */
export const combinePluginUpdates = (updates: ReadonlyArray<PluginStateUpdate>): PluginStateUpdate => {
  const out: Record<string, unknown> = {}
  for (const update of updates) {
    for (const [key, value] of Object.entries(update)) {
      out[key] =
        key === "userContext" && Object.hasOwn(out, key)
          ? mergeRecord(
              out[key] as Readonly<Record<string, unknown>>,
              value as Readonly<Record<string, unknown>>
            )
          : value
    }
  }
  return out as PluginStateUpdate
}
