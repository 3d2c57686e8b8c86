/**
 * The gateway's translations between core's shapes and MCP's: an offered tool as a `tools/list`
 * entry, and what core decided for a call (an answer, or a handler's `ToolOutput`) as a
 * `CallToolResult`. A `ToolOutput` from an upstream server goes back block for block, with its
 * annotations, `_meta`, `structuredContent` and `isError` (docs/mcp-gateway.md#faithful-results).
 */
import { CallTool, type Offer, ToolCall, ToolOutput } from "@plugboard/core"

/** A tool as `tools/list` lists it. */
export interface ListedTool {
  readonly name: string
  readonly description: string
  readonly inputSchema: Readonly<Record<string, unknown>>
}

/** A `CallToolResult`, as the gateway answers one. */
export interface CallResult {
  readonly content: ReadonlyArray<Record<string, unknown>>
  readonly structuredContent?: Readonly<Record<string, unknown>> | undefined
  readonly isError?: boolean | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
  readonly [key: string]: unknown
}

// Offered tools are shared objects (the catalog's prefix, each plugin's on-demand list): each is
// translated once, however many sessions list it.
const listed = new WeakMap<Offer.OfferedTool, ListedTool>()

/**
 * An offered tool as MCP lists it: its name, its description (prefixed `[<title>] ` by core) and
 * its parameters as `inputSchema`, an object schema at the root as MCP requires (`CallTool.listedSchema`).
 */
export const listedTool = (tool: Offer.OfferedTool): ListedTool => {
  let out = listed.get(tool)
  if (out === undefined) {
    out = {
      name: tool.name,
      description: tool.description,
      inputSchema: CallTool.listedSchema(tool.parameters)
    }
    listed.set(tool, out)
  }
  return out
}

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const AUDIENCE = new Set(["user", "assistant"])

/**
 * A block's annotations as MCP defines them (audience, priority, lastModified). A field of another
 * type would make a client refuse the whole result, so only well-typed fields pass.
 */
const annotationsOf = (
  a: Readonly<Record<string, unknown>> | undefined
): Record<string, unknown> | undefined => {
  if (a === undefined) return undefined
  const out: Record<string, unknown> = {}
  if (Array.isArray(a.audience) && a.audience.every((x) => AUDIENCE.has(x as string)))
    out.audience = a.audience
  if (typeof a.priority === "number" && a.priority >= 0 && a.priority <= 1) out.priority = a.priority
  if (typeof a.lastModified === "string") out.lastModified = a.lastModified
  return Object.keys(out).length === 0 ? undefined : out
}

const extras = (block: ToolOutput.BlockExtras): Record<string, unknown> => {
  const annotations = annotationsOf(block.annotations)
  return {
    ...(annotations === undefined ? {} : { annotations }),
    ...(block.meta === undefined ? {} : { _meta: block.meta })
  }
}

/** One of core's blocks as an MCP content block. */
export const contentBlock = (block: ToolOutput.ContentBlock): Record<string, unknown> => {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text, ...extras(block) }
    case "image":
    case "audio":
      return { type: block.type, data: block.data, mimeType: block.mimeType, ...extras(block) }
    case "resource": {
      // MCP's embedded resource carries text or a blob; one with neither (a TypeScript plugin's)
      // is read as text instead of making the client refuse the whole result.
      if (block.text === undefined && block.blob === undefined) {
        return { type: "text", text: ToolOutput.blockText(block), ...extras(block) }
      }
      return {
        type: "resource",
        resource: {
          uri: block.uri,
          ...(block.mimeType === undefined ? {} : { mimeType: block.mimeType }),
          ...(block.text === undefined ? { blob: block.blob } : { text: block.text }),
          ...(block.resourceMeta === undefined ? {} : { _meta: block.resourceMeta })
        },
        ...extras(block)
      }
    }
    case "resource_link":
      return {
        type: "resource_link",
        uri: block.uri,
        name: block.name,
        ...(block.title === undefined ? {} : { title: block.title }),
        ...(block.description === undefined ? {} : { description: block.description }),
        ...(block.mimeType === undefined ? {} : { mimeType: block.mimeType }),
        ...(block.size === undefined ? {} : { size: block.size }),
        ...extras(block)
      }
  }
}

/** A handler's `ToolOutput` as a `CallToolResult`: every block, structured content, error flag, `_meta`. */
export const outputResult = (output: ToolOutput.ToolOutput): CallResult => ({
  content: output.content.map(contentBlock),
  // MCP's structuredContent is an object; any other value is already in the text of the content.
  ...(isRecord(output.structured) ? { structuredContent: output.structured } : {}),
  ...(output.isError ? { isError: true } : {}),
  ...(output.meta === undefined ? {} : { _meta: output.meta })
})

/** An answer of core's (a refusal, a meta-tool's answer, a handler's plain value) as a text result. */
export const answerResult = (answer: ToolCall.Answer, notes: ReadonlyArray<string> = []): CallResult => ({
  content: [{ type: "text", text: answer.content }, ...notes.map((text) => ({ type: "text", text }))],
  ...(ToolCall.isSuccess(answer.outcome) ? {} : { isError: true })
})

/** What running a tool came to, as a result: the handler's blocks when it gave some, else the text. */
export const executedResult = (executed: ToolCall.Executed): CallResult =>
  executed.output === undefined ? answerResult(executed.answer) : outputResult(executed.output)
