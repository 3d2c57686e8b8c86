/**
 * A thread's `loadedPlugins` read back from the messages an AI SDK app already keeps
 * (docs/ai-sdk.md#where-loadedplugins-lives). Every `load_capability` answer carries the names it
 * loaded (`newlyLoaded`, core's `MetaTools.formatToolMessage`), so the union of those, in message
 * order, is exactly what the thread loaded: no storage of its own, nothing to keep in sync with
 * the history the app stores (in its database, or in `useChat`'s messages once converted with
 * `convertToModelMessages`).
 */
import { LoadedPlugins, MetaTools } from "@plugboard/core"

/** The part of an AI SDK `ModelMessage` this module reads: tool results (AI SDK 6 and 7). */
export interface ToolResultMessage {
  readonly role: string
  readonly content?: unknown
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The text of a tool result's `output` (`text` / `error-text` carry core's JSON as a string). */
const outputText = (output: unknown): string | undefined => {
  if (typeof output === "string") return output
  if (!isRecord(output)) return undefined
  if (typeof output.value === "string") return output.value
  return undefined
}

// Core's answer names what it loaded in its `newlyLoaded` array, near its start (before the
// manifests it carries): only that array is read, not the whole answer. Plugin names are
// kebab-case, so the array holds no `]`.
const NEWLY_LOADED = /"newlyLoaded":(\[[^\]]*\])/

/** The names a `load_capability` answer says it loaded; none for anything else. */
const namesIn = (text: string): ReadonlyArray<string> => {
  if (!text.startsWith("{")) return []
  const found = NEWLY_LOADED.exec(text)
  if (found === null) return []
  try {
    const names: unknown = JSON.parse(found[1]!)
    return Array.isArray(names) ? names.filter((n): n is string => typeof n === "string") : []
  } catch {
    return []
  }
}

/**
 * The plugins the `load_capability` answers among `messages` loaded, in load order. Messages that
 * are not tool results, and answers that are not core's, are skipped: the history may hold
 * anything an app put there.
 */
export const loadedFromMessages = (
  messages: ReadonlyArray<ToolResultMessage>
): LoadedPlugins.LoadedPlugins => {
  let loaded: LoadedPlugins.LoadedPlugins = LoadedPlugins.empty
  for (const message of messages) {
    if (message.role !== "tool" || !Array.isArray(message.content)) continue
    for (const part of message.content) {
      if (!isRecord(part) || part.type !== "tool-result" || part.toolName !== MetaTools.LOAD_CAPABILITY)
        continue
      const text = outputText(part.output)
      if (text !== undefined) loaded = LoadedPlugins.add(loaded, namesIn(text))
    }
  }
  return loaded
}
