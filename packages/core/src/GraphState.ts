/**
 * The graph state of seed 004 and its per-field reducers, as pure functions. The LangGraph
 * adapter wraps these; nothing else decides how an update merges.
 */
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

/** The main agent's graph state (seed 004). */
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
