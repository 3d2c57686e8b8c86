/**
 * An MCP `tools/call` result as core's `ToolOutput`. The result comes from a process we do not
 * control, so it is read defensively: every field is checked, a block we cannot carry becomes a
 * text note saying what it was (never a throw, never silently dropped), and what is kept is
 * bounded so a runaway server cannot flood the model or the host's memory.
 */
import { ToolOutput } from "@plugboard/core"

/** Bounds on what is kept of one result. */
export interface ResultLimits {
  /**
   * Characters of text kept over all blocks (text, text resources, notes). Default 16,000,000: what
   * is kept is not what the model reads (a door cuts a long answer to its first page and keeps the
   * rest for `read_result`, core's `ResultPages`); this bound only keeps a runaway server from
   * filling the host's memory.
   */
  readonly maxTextChars?: number
  /** Base64 characters of binary data kept (images, audio, blob resources). Default 20,000,000. */
  readonly maxBinaryChars?: number
  /** Blocks kept. Default 1,000. */
  readonly maxBlocks?: number
  /** Characters of `structuredContent` as JSON; a larger value is dropped with a note. Default 1,000,000. */
  readonly maxStructuredChars?: number
}

/** The default bounds. */
export const defaultLimits: Required<ResultLimits> = {
  maxTextChars: 16_000_000,
  maxBinaryChars: 20_000_000,
  maxBlocks: 1_000,
  maxStructuredChars: 1_000_000
}

type Block = ToolOutput.ContentBlock
type Json = Record<string, unknown>

const isRecord = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

// Base64 as MCP carries it (standard alphabet, optional padding). A block whose data is not
// base64 would be refused by every model provider, so it becomes a note instead.
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** A short JSON excerpt of a value we could not map, so the note loses as little as possible. */
const excerpt = (value: unknown, max = 500): string => {
  let json: string
  try {
    json = JSON.stringify(value) ?? String(value)
  } catch {
    json = String(value)
  }
  return json.length > max ? `${json.slice(0, max)}… (${json.length} characters)` : json
}

/** Keeps blocks within the limits; what does not fit is counted and said in one closing note. */
class Budget {
  private text: number
  private binary: number
  private readonly blocks: Array<Block> = []
  private droppedBlocks = 0
  private droppedText = 0
  private droppedBinary = 0

  constructor(private readonly limits: Required<ResultLimits>) {
    this.text = limits.maxTextChars
    this.binary = limits.maxBinaryChars
  }

  private room(): boolean {
    // One slot stays free for the closing note.
    if (this.blocks.length < this.limits.maxBlocks - 1) return true
    this.droppedBlocks++
    return false
  }

  addText(text: string, extras: ToolOutput.BlockExtras = {}): void {
    if (!this.room()) {
      this.droppedText += text.length
      return
    }
    if (text.length <= this.text) {
      this.text -= text.length
      this.blocks.push({ type: "text", text, ...extras })
      return
    }
    const kept = text.slice(0, this.text)
    this.droppedText += text.length - kept.length
    this.text = 0
    if (kept.length > 0) this.blocks.push({ type: "text", text: kept, ...extras })
    else this.droppedBlocks++
  }

  /** A block that is neither text nor binary (a resource link): it takes a slot and its text's room. */
  addOther(block: Block, size: number): void {
    if (!this.room()) return
    if (size > this.text) {
      this.droppedText += size
      this.droppedBlocks++
      return
    }
    this.text -= size
    this.blocks.push(block)
  }

  addBinary(block: Block & { readonly type: "image" | "audio" }): void {
    if (block.data.length > this.binary) {
      this.droppedBinary += block.data.length
      this.addText(
        `[${block.type} ${block.mimeType} of about ${approxBytes(block.data)} bytes left out: the answer's binary content is over ${this.limits.maxBinaryChars} base64 characters]`
      )
      return
    }
    if (!this.room()) return
    this.binary -= block.data.length
    this.blocks.push(block)
  }

  addResource(block: Block & { readonly type: "resource" }): void {
    const size = block.text?.length ?? 0
    const blob = block.blob?.length ?? 0
    if (size > this.text || blob > this.binary) {
      // What fits of a text resource is kept as text (addText cuts and counts the rest).
      if (blob > this.binary) this.droppedBinary += blob
      this.addText(
        `[resource ${block.uri}${block.mimeType === undefined ? "" : ` (${block.mimeType})`} cut: over the answer's size limit]`
      )
      if (block.text !== undefined) this.addText(block.text)
      return
    }
    if (!this.room()) return
    this.text -= size
    this.binary -= blob
    this.blocks.push(block)
  }

  finish(): ReadonlyArray<Block> {
    if (this.droppedBlocks + this.droppedText + this.droppedBinary > 0) {
      const what = [
        this.droppedText > 0 ? `${this.droppedText} characters of text` : "",
        this.droppedBinary > 0 ? `${this.droppedBinary} base64 characters of binary data` : "",
        this.droppedBlocks > 0 ? `${this.droppedBlocks} block${this.droppedBlocks === 1 ? "" : "s"}` : ""
      ].filter((p) => p !== "")
      this.blocks.push({
        type: "text",
        text: `[truncated: the server's answer was over plugboard's bounds (${this.limits.maxTextChars} characters of text, ${this.limits.maxBlocks} blocks); left out: ${what.join(", ")}]`
      })
    }
    return this.blocks
  }
}

const approxBytes = (base64: string): number => Math.floor((base64.length * 3) / 4)

/** Most characters of JSON a block's `annotations` and `_meta` may take together; more are left out with a note. */
const MAX_EXTRAS_CHARS = 4_096

/**
 * A block's `annotations` and `_meta`, kept as the server sent them when they are objects of a
 * reasonable size (docs/mcp-gateway.md#faithful-results); too large, they are named in a note.
 */
const extrasOf = (budget: Budget, raw: Json, index: number): ToolOutput.BlockExtras => {
  const annotations = isRecord(raw.annotations) ? raw.annotations : undefined
  const meta = isRecord(raw._meta) ? raw._meta : undefined
  if (annotations === undefined && meta === undefined) return {}
  let size: number
  try {
    size = JSON.stringify([annotations, meta]).length
  } catch {
    size = Number.POSITIVE_INFINITY
  }
  if (size > MAX_EXTRAS_CHARS) {
    budget.addText(
      `[the annotations and _meta of content block ${index} were left out: over ${MAX_EXTRAS_CHARS} characters]`
    )
    return {}
  }
  return {
    ...(annotations === undefined ? {} : { annotations }),
    ...(meta === undefined ? {} : { meta })
  }
}

const num = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined

/** One MCP content block into the budget. */
const addBlock = (budget: Budget, raw: unknown, index: number): void => {
  if (!isRecord(raw)) {
    budget.addText(`[content block ${index} is not an object: ${excerpt(raw)}]`)
    return
  }
  const type = raw.type
  switch (type) {
    case "text": {
      const text = str(raw.text)
      if (text === undefined) budget.addText(`[text block ${index} without text: ${excerpt(raw)}]`)
      else budget.addText(text, extrasOf(budget, raw, index))
      return
    }
    case "image":
    case "audio": {
      const data = str(raw.data)
      const mimeType = str(raw.mimeType)
      if (data === undefined || mimeType === undefined || mimeType === "" || !BASE64.test(data)) {
        const why =
          data === undefined
            ? "no data"
            : mimeType === undefined || mimeType === ""
              ? "no mimeType"
              : "data that is not base64"
        budget.addText(
          `[${type} block ${index} left out: ${why}${mimeType ? ` (${mimeType}, ${data?.length ?? 0} characters)` : ""}]`
        )
        return
      }
      budget.addBinary({ type, mimeType, data, ...extrasOf(budget, raw, index) })
      return
    }
    case "resource": {
      const resource = raw.resource
      const uri = isRecord(resource) ? str(resource.uri) : undefined
      if (!isRecord(resource) || uri === undefined) {
        budget.addText(`[embedded resource block ${index} without a uri: ${excerpt(raw)}]`)
        return
      }
      const mimeType = str(resource.mimeType)
      const text = str(resource.text)
      const blob = str(resource.blob)
      if (blob !== undefined && !BASE64.test(blob)) {
        budget.addText(`[resource ${uri} left out: its blob is not base64]`)
        return
      }
      if (text === undefined && blob === undefined) {
        budget.addText(`[resource ${uri}${mimeType ? ` (${mimeType})` : ""} without text or blob]`)
        return
      }
      const resourceMeta = isRecord(resource._meta) ? resource._meta : undefined
      const tooLarge = resourceMeta !== undefined && JSON.stringify(resourceMeta).length > MAX_EXTRAS_CHARS
      if (tooLarge)
        budget.addText(`[the _meta of resource ${uri} was left out: over ${MAX_EXTRAS_CHARS} characters]`)
      budget.addResource({
        type: "resource",
        uri,
        ...(mimeType === undefined ? {} : { mimeType }),
        ...(text === undefined ? {} : { text }),
        ...(text === undefined && blob !== undefined ? { blob } : {}),
        ...(resourceMeta === undefined || tooLarge ? {} : { resourceMeta }),
        ...extrasOf(budget, raw, index)
      })
      return
    }
    case "resource_link": {
      const uri = str(raw.uri)
      if (uri === undefined) {
        budget.addText(`[resource link ${index} without a uri: ${excerpt(raw)}]`)
        return
      }
      // MCP requires a name; a server that leaves it out still gets its link through, named by its uri.
      const name = str(raw.name) ?? uri
      const title = str(raw.title)
      const description = str(raw.description)
      const mimeType = str(raw.mimeType)
      const size = num(raw.size)
      budget.addOther(
        {
          type: "resource_link",
          uri,
          name,
          ...(title === undefined ? {} : { title }),
          ...(description === undefined ? {} : { description }),
          ...(mimeType === undefined ? {} : { mimeType }),
          ...(size === undefined ? {} : { size }),
          ...extrasOf(budget, raw, index)
        },
        uri.length + name.length + (title?.length ?? 0) + (description?.length ?? 0)
      )
      return
    }
    default:
      budget.addText(
        `[content block ${index} of unsupported type ${typeof type === "string" ? `"${type}"` : excerpt(type, 50)}: ${excerpt(raw)}]`
      )
  }
}

/**
 * Maps an MCP `CallToolResult` onto a `ToolOutput`: text, image, audio, embedded resource and
 * resource link blocks as content blocks, each with its `annotations` and `_meta`;
 * `structuredContent` as `structured`; the result's `_meta` as `meta`; `isError` as the error flag
 * (the tool's own failure, given to the model, not thrown). Anything malformed or unknown becomes a text note; a value that is not a result at
 * all becomes an error answer saying so. Never throws.
 */
export const toToolOutput = (result: unknown, limits?: ResultLimits): ToolOutput.ToolOutput => {
  const bounds = { ...defaultLimits, ...limits }
  if (!isRecord(result)) {
    return ToolOutput.text(`The MCP server's answer is not a tool result: ${excerpt(result)}`, true)
  }
  const budget = new Budget(bounds)
  const content = result.content
  if (Array.isArray(content)) {
    for (const [index, block] of content.entries()) addBlock(budget, block, index)
  } else if (content !== undefined) {
    budget.addText(`[the answer's content is not a list: ${excerpt(content)}]`)
  }
  let structured: unknown = result.structuredContent ?? undefined
  if (structured !== undefined) {
    let size: number
    try {
      size = JSON.stringify(structured)?.length ?? 0
    } catch {
      size = Number.POSITIVE_INFINITY
    }
    if (size > bounds.maxStructuredChars) {
      budget.addText(
        `[structured content of ${size} characters left out: over plugboard's bound of ${bounds.maxStructuredChars}]`
      )
      structured = undefined
    }
  }
  const blocks = budget.finish()
  const isError = result.isError === true
  let meta = isRecord(result._meta) ? result._meta : undefined
  if (meta !== undefined && JSON.stringify(meta).length > MAX_EXTRAS_CHARS) meta = undefined
  return ToolOutput.make({
    meta,
    // An answer with nothing in it still says so: the model must not read an empty reply as lost.
    content:
      blocks.length === 0 && structured === undefined
        ? [{ type: "text", text: isError ? "The tool failed without saying why." : "(no content)" }]
        : blocks,
    structured,
    isError
  })
}
