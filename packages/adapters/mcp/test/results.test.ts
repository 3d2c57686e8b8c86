import { ToolOutput } from "@plugboard/core"
import { describe, expect, it } from "vitest"
import { toToolOutput } from "../src/Results.js"

const PNG = "iVBORw0KGgo="

describe("Results.toToolOutput", () => {
  it("maps text, image, audio and embedded resources onto content blocks", () => {
    const output = toToolOutput({
      content: [
        { type: "text", text: "hello" },
        { type: "image", mimeType: "image/png", data: PNG },
        { type: "audio", mimeType: "audio/wav", data: "UklGRg==" },
        { type: "resource", resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "A" } },
        { type: "resource", resource: { uri: "file:///b.bin", blob: "AAEC" } }
      ]
    })
    expect(ToolOutput.isToolOutput(output)).toBe(true)
    expect(output.isError).toBe(false)
    expect(output.content).toEqual([
      { type: "text", text: "hello" },
      { type: "image", mimeType: "image/png", data: PNG },
      { type: "audio", mimeType: "audio/wav", data: "UklGRg==" },
      { type: "resource", uri: "file:///a.txt", mimeType: "text/plain", text: "A" },
      { type: "resource", uri: "file:///b.bin", blob: "AAEC" }
    ])
    expect("structured" in output).toBe(false)
  })

  it("keeps a resource link as a block, which reads as text naming it", () => {
    const output = toToolOutput({
      content: [
        {
          type: "resource_link",
          uri: "demo://resource/2",
          name: "Text Resource 2",
          mimeType: "text/plain",
          description: "a plaintext resource"
        }
      ]
    })
    expect(output.content).toEqual([
      {
        type: "resource_link",
        uri: "demo://resource/2",
        name: "Text Resource 2",
        mimeType: "text/plain",
        description: "a plaintext resource"
      }
    ])
    expect(ToolOutput.toText(output)).toBe(
      '[resource link "Text Resource 2": demo://resource/2 (text/plain)] a plaintext resource'
    )
  })

  it("keeps each block's annotations and _meta, the embedded resource's _meta and the result's _meta", () => {
    const output = toToolOutput({
      content: [
        { type: "text", text: "hi", annotations: { priority: 1, audience: ["user"] }, _meta: { k: 1 } },
        {
          type: "resource",
          resource: { uri: "file:///a.txt", text: "A", _meta: { etag: "x" } },
          annotations: { lastModified: "2026-01-01T00:00:00Z" }
        }
      ],
      _meta: { trace: "t1" }
    })
    expect(output.content).toEqual([
      { type: "text", text: "hi", annotations: { priority: 1, audience: ["user"] }, meta: { k: 1 } },
      {
        type: "resource",
        uri: "file:///a.txt",
        text: "A",
        resourceMeta: { etag: "x" },
        annotations: { lastModified: "2026-01-01T00:00:00Z" }
      }
    ])
    expect(output.meta).toEqual({ trace: "t1" })
  })

  it("names annotations too large to keep instead of keeping them", () => {
    const output = toToolOutput({
      content: [{ type: "text", text: "hi", annotations: { note: "x".repeat(5_000) } }]
    })
    expect(output.content).toEqual([
      {
        type: "text",
        text: "[the annotations and _meta of content block 0 were left out: over 4096 characters]"
      },
      { type: "text", text: "hi" }
    ])
  })

  it("keeps structuredContent and the isError flag", () => {
    const output = toToolOutput({
      content: [{ type: "text", text: "bad city" }],
      structuredContent: { temperature: 3 },
      isError: true
    })
    expect(output.structured).toEqual({ temperature: 3 })
    expect(output.isError).toBe(true)
    // Only a real `true` is an error: a server's "true" string is not.
    expect(toToolOutput({ content: [], isError: "true" }).isError).toBe(false)
  })

  it("turns unknown and malformed blocks into notes saying what they were, never throwing", () => {
    const output = toToolOutput({
      content: [
        { type: "video", uri: "x://clip" },
        "just a string",
        { type: "text" },
        { type: "image", data: PNG },
        { type: "image", mimeType: "image/png", data: "not base64!" },
        { type: "resource", resource: { text: "no uri" } },
        { type: "resource", resource: { uri: "file:///c" } },
        { type: "resource_link", name: "no uri" },
        { type: 42 }
      ]
    })
    const texts = output.content.map((b) => (b.type === "text" ? b.text : `<${b.type}>`))
    expect(texts).toEqual([
      '[content block 0 of unsupported type "video": {"type":"video","uri":"x://clip"}]',
      '[content block 1 is not an object: "just a string"]',
      '[text block 2 without text: {"type":"text"}]',
      "[image block 3 left out: no mimeType]",
      "[image block 4 left out: data that is not base64 (image/png, 11 characters)]",
      '[embedded resource block 5 without a uri: {"type":"resource","resource":{"text":"no uri"}}]',
      "[resource file:///c without text or blob]",
      '[resource link 7 without a uri: {"type":"resource_link","name":"no uri"}]',
      '[content block 8 of unsupported type 42: {"type":42}]'
    ])
    expect(output.isError).toBe(false)
  })

  it("answers a value that is not a result with an error output quoting it", () => {
    for (const bad of [null, "text", 42, [1, 2]]) {
      const output = toToolOutput(bad)
      expect(output.isError).toBe(true)
      expect(ToolOutput.toText(output)).toContain("The MCP server's answer is not a tool result: ")
      expect(ToolOutput.toText(output)).toContain(JSON.stringify(bad))
    }
    const notList = toToolOutput({ content: { type: "text", text: "x" } })
    expect(ToolOutput.toText(notList)).toBe(
      `[the answer's content is not a list: {"type":"text","text":"x"}]`
    )
  })

  it("says so when an answer is empty", () => {
    expect(ToolOutput.toText(toToolOutput({ content: [] }))).toBe("(no content)")
    expect(ToolOutput.toText(toToolOutput({ content: [], isError: true }))).toBe(
      "The tool failed without saying why."
    )
    // Structured content alone is an answer.
    const structuredOnly = toToolOutput({ structuredContent: { ok: true } })
    expect(structuredOnly.content).toEqual([])
    expect(structuredOnly.structured).toEqual({ ok: true })
  })

  it("cuts text over the bound and says how much was left out", () => {
    const output = toToolOutput(
      {
        content: [
          { type: "text", text: "a".repeat(60) },
          { type: "text", text: "b".repeat(60) },
          { type: "text", text: "c".repeat(60) }
        ]
      },
      { maxTextChars: 100 }
    )
    expect(output.content).toEqual([
      { type: "text", text: "a".repeat(60) },
      { type: "text", text: "b".repeat(40) },
      {
        type: "text",
        text: "[truncated: the server's answer was over plugboard's bounds (100 characters of text, 1000 blocks); left out: 80 characters of text, 1 block]"
      }
    ])
  })

  it("bounds a flood of blocks, binary data and structured content", () => {
    const many = toToolOutput(
      { content: Array.from({ length: 50 }, () => ({ type: "text", text: "x" })) },
      { maxBlocks: 10 }
    )
    expect(many.content).toHaveLength(10)
    expect(ToolOutput.toText(many)).toContain("left out: 41 characters of text, 41 blocks")

    const big = "A".repeat(400)
    const images = toToolOutput(
      {
        content: [
          { type: "image", mimeType: "image/png", data: big },
          { type: "image", mimeType: "image/png", data: big }
        ]
      },
      { maxBinaryChars: 500 }
    )
    expect(images.content[0]).toEqual({ type: "image", mimeType: "image/png", data: big })
    expect(images.content[1]).toEqual({
      type: "text",
      text: "[image image/png of about 300 bytes left out: the answer's binary content is over 500 base64 characters]"
    })
    expect(ToolOutput.toText(images)).toContain("400 base64 characters of binary data")

    const resource = toToolOutput(
      { content: [{ type: "resource", resource: { uri: "file:///big.txt", text: "z".repeat(500) } }] },
      { maxTextChars: 200 }
    )
    const text = ToolOutput.toText(resource)
    expect(text).toContain("[resource file:///big.txt cut: over the answer's size limit]")
    expect(text).toContain("z".repeat(100))
    expect(text).not.toContain("z".repeat(201))
    expect(text).toContain("[truncated:")

    const structured = toToolOutput(
      { content: [{ type: "text", text: "ok" }], structuredContent: { rows: "r".repeat(300) } },
      { maxStructuredChars: 100 }
    )
    expect(structured.structured).toBeUndefined()
    expect(ToolOutput.toText(structured)).toContain("[structured content of 311 characters left out")
  })

  it("keeps a 16,000,000-character default text bound (a door pages what the model reads: ResultPages)", () => {
    const output = toToolOutput({ content: [{ type: "text", text: "x".repeat(16_500_000) }] })
    const total = output.content.reduce((n, b) => n + (b.type === "text" ? b.text.length : 0), 0)
    expect(total).toBeLessThan(16_001_000)
    expect(output.content.at(-1)).toMatchObject({
      type: "text",
      text: expect.stringContaining("500000 characters")
    })
  })
})
