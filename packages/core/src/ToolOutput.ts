/**
 * A tool's answer as content blocks: what a handler returns when plain text or JSON is not
 * enough (an image, an embedded resource, an error the tool itself reports). MCP servers answer
 * in this shape; a TypeScript plugin may too. The agent adapter turns it into the ToolMessage:
 * the blocks become its content, `isError` its error status (the model sees an error answer,
 * the turn goes on, nothing is thrown).
 */

/**
 * What any block may carry besides its content, kept as the tool gave it so that a door passing
 * blocks on (the MCP gateway, docs/mcp-gateway.md#faithful-results) loses nothing: MCP's
 * `annotations` (audience, priority, lastModified) and `_meta`. Readers that only need the content
 * ignore them.
 */
export interface BlockExtras {
  readonly annotations?: Readonly<Record<string, unknown>> | undefined
  /** The block's `_meta`. */
  readonly meta?: Readonly<Record<string, unknown>> | undefined
}

/** One piece of a tool's answer. Binary data is base64, as MCP and the model providers carry it. */
export type ContentBlock =
  | ({ readonly type: "text"; readonly text: string } & BlockExtras)
  | ({ readonly type: "image"; readonly mimeType: string; readonly data: string } & BlockExtras)
  | ({ readonly type: "audio"; readonly mimeType: string; readonly data: string } & BlockExtras)
  | ({
      readonly type: "resource"
      readonly uri: string
      readonly mimeType?: string | undefined
      /** A text resource's content. */
      readonly text?: string | undefined
      /** A binary resource's content, base64. */
      readonly blob?: string | undefined
      /** The embedded resource's own `_meta` (`meta` is the block's). */
      readonly resourceMeta?: Readonly<Record<string, unknown>> | undefined
    } & BlockExtras)
  | ({
      /** A pointer to a resource the tool did not embed (MCP's `resource_link`). */
      readonly type: "resource_link"
      readonly uri: string
      readonly name: string
      readonly title?: string | undefined
      readonly description?: string | undefined
      readonly mimeType?: string | undefined
      /** Its size in bytes, when the tool said. */
      readonly size?: number | undefined
    } & BlockExtras)

/** A tool's answer as content blocks, with an optional structured value and an error flag. */
export interface ToolOutput {
  readonly _tag: "ToolOutput"
  readonly content: ReadonlyArray<ContentBlock>
  /** A JSON value the tool gave beside its content (MCP's `structuredContent`). */
  readonly structured?: unknown
  /** The tool reports a failure: the model gets an error ToolMessage. */
  readonly isError: boolean
  /** The answer's own `_meta` (MCP), kept for a door that passes answers on. */
  readonly meta?: Readonly<Record<string, unknown>> | undefined
}

/** Builds a `ToolOutput`. */
export const make = (options: {
  readonly content: ReadonlyArray<ContentBlock>
  readonly structured?: unknown
  readonly isError?: boolean | undefined
  readonly meta?: Readonly<Record<string, unknown>> | undefined
}): ToolOutput => ({
  _tag: "ToolOutput",
  content: options.content,
  ...(options.structured === undefined ? {} : { structured: options.structured }),
  isError: options.isError === true,
  ...(options.meta === undefined ? {} : { meta: options.meta })
})

/** A text answer, or a text error with `isError`. */
export const text = (value: string, isError = false): ToolOutput =>
  make({ content: [{ type: "text", text: value }], isError })

/** True for a value built by `make` (a handler's answer is checked with it). */
export const isToolOutput = (value: unknown): value is ToolOutput =>
  typeof value === "object" &&
  value !== null &&
  (value as { _tag?: unknown })._tag === "ToolOutput" &&
  Array.isArray((value as { content?: unknown }).content)

/** Bytes a base64 text decodes to (padding taken off). */
const decodedBytes = (base64: string): number => {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding)
}

/**
 * One block as text: what a text-only reader (the `tool_call` event's `output`, a log, a
 * provider that takes no images in tool answers) is shown. Binary content is named, never
 * inlined: its bytes mean nothing as text and would flood the reader.
 */
export const blockText = (block: ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
    case "audio":
      return `[${block.type} ${block.mimeType}, ${decodedBytes(block.data)} bytes]`
    case "resource": {
      const head = `[resource ${block.uri}${block.mimeType === undefined ? "" : ` (${block.mimeType})`}]`
      if (block.text !== undefined) return `${head}\n${block.text}`
      if (block.blob !== undefined) return `${head} ${decodedBytes(block.blob)} bytes`
      return head
    }
    case "resource_link": {
      // The model cannot follow a link by itself: it is told what the link points at.
      const name = block.title ?? block.name
      return (
        `[resource link${name === "" ? "" : ` "${name}"`}: ${block.uri}${block.mimeType === undefined ? "" : ` (${block.mimeType})`}]` +
        (block.description === undefined || block.description === "" ? "" : ` ${block.description}`)
      )
    }
  }
}

/**
 * The whole answer as text: the blocks one per paragraph, then the structured value as JSON when
 * no text block already carries it (MCP servers are asked to repeat it as text; many do).
 */
export const toText = (output: ToolOutput): string => {
  const parts = output.content.map(blockText)
  if (output.structured !== undefined) {
    let json: string | undefined
    try {
      json = JSON.stringify(output.structured)
    } catch {
      json = undefined
    }
    if (json !== undefined && !parts.some((p) => p.includes(json!))) parts.push(json)
  }
  return parts.join("\n\n")
}

/** A handler's plain value as text: a string as it is, anything else as JSON. */
export const valueText = (value: unknown): string => {
  if (typeof value === "string") return value
  if (value === undefined) return ""
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
