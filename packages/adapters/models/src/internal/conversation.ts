/**
 * What a conversation's meta-tool results tell the router when it has no catalog of its own: the
 * plugins a `list_capabilities` result listed, and the manifests and tool names a
 * `load_capability` result returned (docs/spec/meta-tools.md). A client that runs the meta-tools
 * itself (plugboard's AI SDK adapter, an MCP gateway, a test) sends these results back, so the
 * router can discover, load and call from the conversation alone, as a real model does.
 *
 * Results are read leniently: anything that is not the shape core's `MetaTools.formatToolMessage`
 * writes is skipped, never an error (the router is a stand-in for a model, not a validator).
 */
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages"
import type { ManifestExample } from "@plugboard/core"

/** Meta-tool names (docs/spec/meta-tools.md). */
export const LIST_CAPABILITIES = "list_capabilities"
export const LOAD_CAPABILITY = "load_capability"

/** A plugin as a `list_capabilities` result listed it. */
export interface ListedPlugin {
  readonly name: string
  readonly title?: string | undefined
  readonly summary?: string | undefined
  readonly tags: ReadonlyArray<string>
  /** Every tool of it was already offered when it was listed. */
  readonly loaded: boolean
  /** Why it cannot be loaded now, when it cannot. */
  readonly unavailable?: string | undefined
}

/** A plugin as a `load_capability` result returned it. */
export interface LoadedPlugin {
  readonly name: string
  readonly title?: string | undefined
  readonly summary?: string | undefined
  readonly whenToUse: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
  readonly examples: ReadonlyArray<ManifestExample>
  /** Names of the tools the load made available. */
  readonly tools: ReadonlyArray<string>
}

/** What the conversation's meta-tool results say; later results replace earlier ones by name. */
export interface Learned {
  readonly listed: ReadonlyMap<string, ListedPlugin>
  readonly loaded: ReadonlyMap<string, LoadedPlugin>
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined)

const strings = (v: unknown): ReadonlyArray<string> =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const listedOf = (p: Record<string, unknown>, name: string): ListedPlugin => ({
  name,
  title: str(p.title),
  summary: str(p.summary),
  tags: strings(p.tags),
  loaded: p.loaded === true,
  unavailable: str(p.unavailable)
})

const examplesOf = (v: unknown): ReadonlyArray<ManifestExample> =>
  Array.isArray(v)
    ? v.flatMap((e) =>
        isRecord(e) && typeof e.user === "string" && typeof e.tool === "string"
          ? [
              {
                user: e.user,
                tool: e.tool,
                ...(isRecord(e.args) ? { args: e.args } : {}),
                ...(typeof e.thought === "string" ? { thought: e.thought } : {})
              } as ManifestExample
            ]
          : []
      )
    : []

const loadedOf = (r: Record<string, unknown>, name: string): LoadedPlugin => {
  const m = isRecord(r.manifest) ? r.manifest : {}
  return {
    name,
    title: str(m.title),
    summary: str(m.summary),
    whenToUse: strings(m.whenToUse),
    tags: strings(m.tags),
    examples: examplesOf(m.examples),
    tools: Array.isArray(r.tools)
      ? r.tools.flatMap((t) => (isRecord(t) && typeof t.name === "string" ? [t.name] : []))
      : []
  }
}

/** Reads every meta-tool result of `messages`, oldest first. */
export const learn = (messages: ReadonlyArray<BaseMessage>): Learned => {
  const listed = new Map<string, ListedPlugin>()
  const loaded = new Map<string, LoadedPlugin>()
  const calls = new Map<string, string>()
  for (const m of messages) {
    if (AIMessage.isInstance(m)) {
      for (const c of m.tool_calls ?? []) if (c.id !== undefined) calls.set(c.id, c.name)
      continue
    }
    if (!ToolMessage.isInstance(m)) continue
    const tool = calls.get(m.tool_call_id) ?? m.name
    if (tool !== LIST_CAPABILITIES && tool !== LOAD_CAPABILITY) continue
    const value = parse(m.text)
    if (!isRecord(value)) continue
    if (tool === LIST_CAPABILITIES) {
      for (const p of Array.isArray(value.plugins) ? value.plugins : [])
        if (isRecord(p) && typeof p.name === "string") listed.set(p.name, listedOf(p, p.name))
    } else {
      for (const r of Array.isArray(value.results) ? value.results : [])
        if (isRecord(r) && r.status === "loaded" && typeof r.name === "string")
          loaded.set(r.name, loadedOf(r, r.name))
    }
  }
  return { listed, loaded }
}
