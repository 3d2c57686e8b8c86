/**
 * Translation of core's offered tools into the tool definitions LangChain chat models bind.
 * The OpenAI function format is accepted by every `@langchain/*` provider's `bindTools`.
 */
import type { Offer, ToolSpec } from "@plugboard/core"

/** A tool definition in the OpenAI function format. */
export interface FunctionDefinition {
  readonly type: "function"
  readonly function: ToolSpec.ToolSpec
}

// Core hands out the same OfferedTool objects call after call, so each is translated once.
const cache = new WeakMap<Offer.OfferedTool, FunctionDefinition>()

/** The definition bound for one offered tool (cached per offered tool object). */
export const toDefinition = (tool: Offer.OfferedTool): FunctionDefinition => {
  let def = cache.get(tool)
  if (def === undefined) {
    def = {
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters }
    }
    cache.set(tool, def)
  }
  return def
}

/** The definitions bound for one model call, in the offer's order. */
export const toDefinitions = (tools: ReadonlyArray<Offer.OfferedTool>): Array<FunctionDefinition> =>
  tools.map(toDefinition)
