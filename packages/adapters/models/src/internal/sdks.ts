/**
 * The provider SDKs, each imported once when this module loads, or `undefined` when it is not
 * installed (they are optional peers: docs/packages.md). Kept out of the package's entry point so
 * that its declarations never name a package the user may not have.
 */
import type * as AnthropicSdk from "@langchain/anthropic"
import type * as OllamaSdk from "@langchain/ollama"
import type * as OpenAiSdk from "@langchain/openai"

/**
 * Whether `error` says that `name` itself is not installed. A missing module inside an installed
 * SDK is a broken install, not an absent option, and is rethrown.
 */
const isAbsent = (error: unknown, name: string): boolean => {
  const e = error as { code?: unknown; message?: unknown }
  return (
    (e?.code === "ERR_MODULE_NOT_FOUND" || e?.code === "MODULE_NOT_FOUND") &&
    typeof e.message === "string" &&
    (e.message.includes(`Cannot find package '${name}'`) ||
      e.message.includes(`Cannot find module '${name}'`))
  )
}

const optional = async <M>(name: string, load: () => Promise<M>): Promise<M | undefined> => {
  try {
    return await load()
  } catch (error) {
    if (isAbsent(error, name)) return undefined
    throw error
  }
}

/** Each SDK's module, or `undefined` when the package is not installed. */
export const [anthropic, ollama, openai]: readonly [
  typeof AnthropicSdk | undefined,
  typeof OllamaSdk | undefined,
  typeof OpenAiSdk | undefined
] = await Promise.all([
  optional("@langchain/anthropic", () => import("@langchain/anthropic")),
  optional("@langchain/ollama", () => import("@langchain/ollama")),
  optional("@langchain/openai", () => import("@langchain/openai"))
])
