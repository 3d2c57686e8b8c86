/**
 * Code mode in the agent loop, where the sandbox fails (docs/code-mode.md): a sandbox whose engine
 * cannot start (`unavailable`) answers the `run_code` call with core's message, which tells the
 * model to call the tools directly, and the turn goes on. Every other failure reason is run for
 * real in the host's e2e test with QuickJS (packages/host-node/test/codeMode.e2e.test.ts); this
 * one cannot be provoked there, so the port is answered here by a sandbox that only refuses.
 */
import { Catalog, CodeMode, CodeSandbox, definePlugin, defineTool } from "@plugboard/core"
import { ScriptedChatModel, type ScriptedTurn } from "@plugboard/models"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { createMainAgent, MemorySaver, runTurn } from "../src/index.js"

const ran: Array<string> = []
const echo = definePlugin({
  name: "echo",
  manifest: { title: "Echo", summary: "Echoes.", whenToUse: ["echo"], visibility: "always" },
  tools: [
    defineTool({
      name: "echo",
      description: "Echoes its text.",
      input: Schema.Struct({ text: Schema.String }),
      handler: ({ text }) => {
        ran.push(text)
        return text
      }
    })
  ]
})

const refusal = new CodeSandbox.CodeSandboxError({
  reason: "unavailable",
  message: "the WebAssembly module did not load"
})
const runs: Array<string> = []
/** A sandbox whose engine did not load: every run fails `unavailable`, as QuickJsSandbox's does. */
const unloadable: CodeSandbox.CodeSandboxService = {
  name: "unloadable",
  run: (request) => {
    runs.push(request.code)
    return Effect.fail(refusal)
  }
}

describe("run_code on a sandbox that cannot start", () => {
  it("tells the model code mode is unavailable, runs nothing, and the turn goes on to a direct call", async () => {
    const read: Array<string> = []
    const model = ScriptedChatModel.script([
      [{ tool: CodeMode.RUN_CODE, args: { code: 'return await tools.echo.echo({ text: "in program" })' } }],
      (t: ScriptedTurn) => {
        read.push(String(t.messages.at(-1)?.content))
        return [{ tool: "echo", args: { text: "direct" } }]
      },
      "Done."
    ])
    const agent = await createMainAgent({
      catalog: Catalog.unsafeMake([echo]),
      model,
      checkpointer: new MemorySaver(),
      basePrompt: "You are a test assistant.",
      request: { did: "did:key:alice", sessionId: "s1" },
      codeMode: { sandbox: unloadable }
    })
    const turn = await runTurn(agent, { message: "echo it" })
    expect(turn.answer).toBe("Done.")
    expect(model.calls[0]!.offeredTools).toContain(CodeMode.RUN_CODE)
    expect(runs).toHaveLength(1)
    expect(read).toEqual([CodeMode.failure(refusal, CodeMode.DEFAULT_BOUNDS)])
    expect(read[0]).toBe(
      "Code mode is unavailable on this server: the WebAssembly module did not load. Call the tools directly."
    )
    expect(ran).toEqual(["direct"])
  })
})
