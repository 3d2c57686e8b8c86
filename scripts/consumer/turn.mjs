// One turn through the published packages: core's catalog, the LangGraph adapter, the scripted
// model; then the server from @plugboard/host-node on an ephemeral port, answering /health.
import assert from "node:assert/strict"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Catalog } from "@plugboard/core"
import { createOracleApp, quietLogger } from "@plugboard/host-node"
import { createMainAgent, MemorySaver, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { plugins } from "./plugins.mjs"

const catalog = Catalog.unsafeMake(plugins)
const model = ScriptedChatModel.script([
  { tool: "load_capability", args: { names: ["greeter"] } },
  { tool: "greet", args: { name: "Ada" } },
  "Done."
])
const agent = await createMainAgent({
  catalog,
  model,
  checkpointer: new MemorySaver(),
  request: { did: "did:key:z6MkConsumer", sessionId: "consumer" }
})
const turn = await runTurn(agent, { message: "Greet Ada" })
const done = turn.events.filter((e) => e._tag === "tool_call" && e.status === "done")
assert.deepEqual(
  done.map((e) => e.toolName),
  ["load_capability", "greet"]
)
assert.equal(String(done[1].output), "Hello, Ada!")
assert.deepEqual([...turn.state.loadedPlugins], ["greeter"])

const app = await createOracleApp({
  plugins,
  env: { PLUGBOARD_DATA_DIR: mkdtempSync(join(tmpdir(), "plugboard-consumer-")) },
  logger: quietLogger
})
const { url } = await app.listen(0, "127.0.0.1")
const health = await (await fetch(`${url}/health`)).json()
await app.close()
assert.equal(health.status, "ok")
console.log(`consumer: a turn called ${done.map((e) => e.toolName).join(", ")}; the server answered /health`)
