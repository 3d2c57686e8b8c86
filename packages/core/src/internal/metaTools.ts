/**
 * The meta-tools' names and definitions (docs/spec/meta-tools.md), re-exported by `MetaTools`:
 * the Tier-1 hint, the offer's prefix and the client-tool rules name them without importing the
 * meta-tools' behaviour.
 */
import type { OfferedTool } from "./offered.js"

/** Name of the discovery meta-tool. */
export const LIST_CAPABILITIES = "list_capabilities"
/** Name of the loading meta-tool. */
export const LOAD_CAPABILITY = "load_capability"
/**
 * Name of the third meta-tool, offered only by doors whose client keeps the tool list itself (an
 * MCP client): it runs a loaded plugin's tool by name (docs/spec/meta-tools.md#call_tool).
 */
export const CALL_TOOL = "call_tool"

/**
 * Name of the meta-tool that reads the pages of a tool result that was cut, offered only on a
 * thread that holds one (`ResultPages`, docs/spec/meta-tools.md#read_result).
 */
export const READ_RESULT = "read_result"

/**
 * Name of code mode's meta-tool, offered only while code mode is on: it runs a program over the
 * offered tools (`CodeMode`, docs/code-mode.md).
 */
export const RUN_CODE = "run_code"

/** Every meta-tool name: reserved, whichever door offers which (docs/spec/catalog.md#tool-names). */
export const META_TOOL_NAMES: ReadonlyArray<string> = [
  LIST_CAPABILITIES,
  LOAD_CAPABILITY,
  CALL_TOOL,
  READ_RESULT,
  RUN_CODE
]

/**
 * The meta-tools as offered on every model call. Kept terse: they are paid on every turn.
 * The aim is about 100 tokens for both; these cost 87 (o200k: 46 + 41, counted with
 * `TokenBudget.toolCost`).
 */
export const definitions: ReadonlyArray<OfferedTool> = [
  {
    name: LIST_CAPABILITIES,
    description: "List plugins you can load. Optional query ranks by relevance; category filters.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string" },
        // No enum: it would cost ~25 tokens on every turn; a wrong category gets an error
        // that lists the valid ones, and list_capabilities shows each plugin's category.
        category: { type: "string" },
        limit: { type: "integer" }
      }
    },
    kind: "meta"
  },
  {
    name: LOAD_CAPABILITY,
    description: "Load plugins by name; their tools become available in this conversation.",
    parameters: {
      type: "object",
      properties: { names: { type: "array", items: { type: "string" } } },
      required: ["names"]
    },
    kind: "meta"
  }
]

/**
 * `call_tool` as offered, after the two others (`CallTool.offer`). Terse like them: a client that
 * shows new tools pays it on every list for nothing, so it costs as little as it can.
 */
export const callToolDefinition: OfferedTool = {
  name: CALL_TOOL,
  description: "Call a tool of a loaded plugin by name, if it is not in your tool list yet.",
  parameters: {
    type: "object",
    properties: { name: { type: "string" }, arguments: { type: "object" } },
    required: ["name"]
  },
  kind: "meta"
}
