/**
 * A tool's question in an AI SDK turn (issue 40, docs/waiting.md): a real MCP server on the
 * official SDK elicits a form during its call; the turn's `onToolQuestion` gets the question and
 * its schema, and its answer reaches the server on that call (the tool's result shows it). Without
 * the callback, or when it throws, the server is declined.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createPlugboard, type Plugboard } from "@plugboard/ai-sdk"
import type { Wait } from "@plugboard/core"
import { type MountedMcpServers, mountMcpServers } from "@plugboard/mcp"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { play, scriptedModel, toolResultsSent } from "./fixtures.js"

const askingServer = join(import.meta.dirname, "../../../host-node/test/fixtures/mcp/asking-server.mjs")

describe("a tool's question (MCP elicitation) in an AI SDK turn", () => {
  let mcp: MountedMcpServers
  let board: Plugboard
  let cacheDir: string
  beforeAll(async () => {
    cacheDir = mkdtempSync(join(tmpdir(), "plugboard-ai-sdk-ask-"))
    mcp = await mountMcpServers(
      { mcpServers: { asking: { command: process.execPath, args: [askingServer] } } },
      { cacheDir }
    )
    expect(mcp.errors).toEqual([])
    board = await createPlugboard({ plugins: [], sources: [mcp] })
  }, 60_000)
  afterAll(async () => {
    await mcp?.close()
    rmSync(cacheDir, { recursive: true, force: true })
  })

  const askName = async (options: Parameters<Plugboard["turn"]>[0]) => {
    const { model, sent } = scriptedModel([
      { calls: [["load_capability", { names: ["asking"] }]] },
      { calls: [["ask_name", {}]] },
      { text: "done" }
    ])
    await play(board.turn(options), model, "who am I?")
    return toolResultsSent(sent[2]!).at(-1)!.text
  }

  it("onToolQuestion gets the question and schema; its values reach the server", async () => {
    const asked: Array<Wait.InputQuestion> = []
    const text = await askName({
      onToolQuestion: ({ question, toolName }) => {
        expect(toolName).toBe("ask_name")
        asked.push(question)
        return { _tag: "values", values: { name: "Ada", age: 36 } }
      }
    })
    expect(asked).toEqual([expect.objectContaining({ message: "Who are you?" })])
    expect(asked[0]!.schema).toMatchObject({ type: "object", required: ["name", "age"] })
    expect(text).toContain(
      `elicited: ${JSON.stringify({ action: "accept", content: { name: "Ada", age: 36 } })}`
    )
  })

  it("without onToolQuestion, or when it throws, the server is declined", async () => {
    const decline = `elicited: ${JSON.stringify({ action: "decline" })}`
    expect(await askName({})).toContain(decline)
    expect(
      await askName({
        onToolQuestion: () => {
          throw new Error("no user here")
        }
      })
    ).toContain(decline)
  })
})
