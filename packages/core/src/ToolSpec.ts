/**
 * The one tool spec type: a tool as a model is offered it, its name, its description and the JSON
 * Schema of its arguments. Every other tool shape that carries these three is built from it: the
 * offered tool (`Offer.OfferedTool`), the catalog's resolved tool, a checked client tool, the
 * model port's tool list (`ChatModel.ToolDefinition`), what the token budget prices, and the
 * console's tool. Shapes with another role stay their own: a plugin's `PluginTool` (an Effect
 * Schema and a handler), a source's `CatalogSource.SourceToolDescription` (the source's own name,
 * title and `inputSchema`; an MCP tool description is one) and `SourceTool` (that, and what runs
 * it), and the portal's wire forms (`ClientTools.ClientToolInput`, the state's browser tools and
 * actions, which carry the schema as `schema`).
 * A leaf module: it imports nothing, so any module may use it without an import cycle.
 */

/** A tool as a model is offered it. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  /** JSON Schema of the arguments. */
  readonly parameters: Readonly<Record<string, unknown>>
}
