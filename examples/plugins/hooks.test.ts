/**
 * The hooks example (examples/plugins/hooks.ts) driven end to end: every claim docs/plugins.md
 * makes about it is checked here, on the LangGraph agent with a scripted model, and on a real
 * server for the routes and for shared state read at boot.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Catalog, type RuntimeLogger } from "@plugboard/core"
import { createOracleApp, quietLogger } from "@plugboard/host-node"
import { type AgentStateValue, createMainAgent, MemorySaver, runTurn } from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { generateSigner, mintInvocation } from "@plugboard/ucan"
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { type Member, makeTeamPlugins, ROSTER, ROSTER_KEY } from "./hooks.js"

const ADA = "did:key:z6MkAda" // on the roster
const STRANGER = "did:key:z6MkStranger" // not on the roster

/** Reads every `getSharedState` once, as `createOracleApp` does at boot. */
/** What a host does at boot (`createOracleApp` too): every `getSharedState`, merged; throws the `SharedStateError`. */
const readShared = async (catalog: Catalog.Catalog) =>
  Either.getOrThrowWith(await Effect.runPromise(Effect.either(Catalog.readSharedState(catalog))), (e) => e)

/** A logger that keeps what the runtime reports. */
const recordingLogger = () => {
  const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = []
  const at =
    (level: string) =>
    (message: string, fields?: Record<string, unknown>): void => {
      lines.push({ level, message, ...(fields === undefined ? {} : { fields }) })
    }
  const logger: RuntimeLogger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }
  return { logger, lines }
}

/** One request's agent on both plugins (registered in reverse: dependsOn fixes the order). */
const setUp = async (
  script: Parameters<typeof ScriptedChatModel.script>[0],
  options: { did?: string; roster?: ReadonlyArray<Member> } = {}
) => {
  const team = makeTeamPlugins({ loadRoster: async () => options.roster ?? ROSTER })
  const catalog = Catalog.unsafeMake([team.teamDirectory, team.teamAdmin])
  const model = ScriptedChatModel.script(script)
  const { logger, lines } = recordingLogger()
  const agent = await createMainAgent({
    catalog,
    model,
    checkpointer: new MemorySaver(),
    shared: await readShared(catalog),
    logger,
    request: { did: options.did ?? ADA, sessionId: "thread-1" }
  })
  return { team, catalog, model, agent, lines }
}

const toolMessages = (messages: AgentStateValue["messages"]) =>
  messages.filter((m) => m.getType() === "tool").map((m) => ({ name: m.name, content: String(m.content) }))

describe("docs/plugins.md", () => {
  it("quotes this example verbatim", () => {
    const here = dirname(fileURLToPath(import.meta.url))
    const source = readFileSync(join(here, "hooks.ts"), "utf8")
    const guide = readFileSync(join(here, "../../docs/plugins.md"), "utf8")
    // Every TypeScript block of the guide except the import line is an excerpt of hooks.ts.
    const excerpts = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .filter((block) => !block.startsWith("import "))
    expect(excerpts.length).toBeGreaterThanOrEqual(5)
    for (const excerpt of excerpts) expect(source).toContain(excerpt.trimEnd())
  })
})

describe("the hooks example: catalog", () => {
  it("builds clean, in dependency order, middleware in catalog order", () => {
    const team = makeTeamPlugins()
    const catalog = Catalog.unsafeMake([team.teamDirectory, team.teamAdmin])
    expect(catalog.warnings).toEqual([])
    expect(catalog.entries.map((e) => e.name)).toEqual(["team-admin", "team-directory"])
    expect(catalog.middlewares.map((m) => `${m.plugin}/${m.middleware.name}`)).toEqual([
      "team-admin/usage-meter",
      "team-directory/directory-trace"
    ])
    expect(catalog.withSharedState.map((e) => e.name)).toEqual(["team-admin"])
    expect(catalog.withRequestHooks.map((e) => e.name)).toEqual(["team-directory"])
  })

  it("refuses to boot without the plugin it dependsOn", () => {
    const { teamDirectory } = makeTeamPlugins()
    const built = Catalog.make([teamDirectory])
    expect(Either.isLeft(built) && built.left.lines).toEqual([
      "[boot-error] Plugin 'team-directory' depends on 'team-admin', which is not registered."
    ])
  })

  it("refuses a shared state key that another plugin already registered", async () => {
    const team = makeTeamPlugins()
    const copy = { ...team.teamAdmin, name: "team-admin-copy", routes: [] }
    const catalog = Catalog.unsafeMake([team.teamAdmin, copy])
    await expect(readShared(catalog)).rejects.toMatchObject({
      errors: [
        `Plugin 'team-admin-copy' shared state key '${ROSTER_KEY}' is already registered by plugin 'team-admin' (shared state is one namespace).`
      ]
    })
  })
})

describe("the hooks example: one turn", () => {
  it("offers nothing of team-directory until it is loaded, then its tools, request tool and sub-agent", async () => {
    const { team, model, agent } = await setUp([
      { tool: "find_teammate", args: { name: "Grace" } }, // not offered yet: refused, not run
      { tool: "load_capability", args: { names: ["team-directory"] } },
      [
        { tool: "find_teammate", args: { name: "Grace" } },
        { tool: "my_team", args: {} }
      ],
      { tool: "org_chart", args: { task: "Who does Linus report to?" } },
      "Grace leads platform; Linus reports to her."
    ])
    const turn = await runTurn(agent, { message: "Tell me about Grace and Linus." })
    expect(turn.answer).toBe("Grace leads platform; Linus reports to her.")
    // team-directory's afterModel wrote the user's team into the thread's userContext.
    expect(turn.state.userContext).toEqual({ team: "platform" })

    const offered = model.calls.map((c) => c.offeredTools)
    expect(offered[0]).toEqual(["list_capabilities", "load_capability"])
    expect(offered[1]).toEqual(["list_capabilities", "load_capability"])
    // Loading appends: catalog tools first, then the request tool, then the sub-agent.
    expect(offered[2]).toEqual([
      "list_capabilities",
      "load_capability",
      "find_teammate",
      "my_team",
      "org_chart"
    ])

    const tools = toolMessages(turn.state.messages)
    expect(tools[0]).toEqual({
      name: "find_teammate",
      content:
        "Tool 'find_teammate' is not available yet: it belongs to plugin 'team-directory', which is not loaded in this conversation. Call load_capability with {\"names\": [\"team-directory\"]}, then call 'find_teammate' again."
    })
    // The load result lists the request tool and the sub-agent too.
    const loaded = JSON.parse(tools[1]!.content)
    expect(loaded.results[0].tools.map((t: { name: string }) => t.name)).toEqual([
      "find_teammate",
      "my_team",
      "org_chart"
    ])
    expect(loaded.results[0].tools[0].description).toBe(
      "[Team Directory] Looks a teammate up by name: team and manager."
    )
    // Handlers see the shared roster and the caller.
    expect(JSON.parse(tools[2]!.content)).toEqual({
      did: "did:key:z6MkGrace",
      name: "Grace",
      team: "platform",
      isYou: false
    })
    expect(JSON.parse(tools[3]!.content)).toEqual({ team: "platform", teammates: ["Grace", "Linus"] })
    expect(tools[4]).toEqual({ name: "org_chart", content: "Linus (platform) reports to Grace." })

    // The plugin's `prompt` joins the system prompt once the plugin is loaded.
    const systemOf = (i: number) => String(model.calls[i]!.messages[0]!.content)
    expect(systemOf(1)).not.toContain("When you name a teammate")
    expect(systemOf(2)).toContain("When you name a teammate, say which team they are on.")

    // Middleware: every model call, catalog order, the same order before and after.
    expect(team.usage.modelCalls.get(ADA)).toBe(5)
    expect(team.usage.outputTokens.get(ADA)).toBeGreaterThan(0)
    const perCall = [
      "team-admin:beforeModel",
      "team-directory:beforeModel",
      "team-admin:afterModel",
      "team-directory:afterModel"
    ]
    expect(team.usage.trace).toEqual(Array.from({ length: 5 }, () => perCall).flat())
    expect(turn.state.loadedPlugins).toEqual(["team-directory"])
  })

  it("gives the per-request tool only to roster members", async () => {
    const { model, agent } = await setUp(
      [{ tool: "load_capability", args: { names: ["team-directory"] } }, { tool: "my_team" }, "Sorry."],
      { did: STRANGER }
    )
    const turn = await runTurn(agent, { message: "Who is on my team?" })
    expect(model.calls[1]!.offeredTools).toEqual([
      "list_capabilities",
      "load_capability",
      "find_teammate",
      "org_chart"
    ])
    expect(toolMessages(turn.state.messages)[1]!.content).toMatch(/^There is no tool named 'my_team'\./)
  })

  it("skips a sub-agent whose init fails, logs it, and runs the turn", async () => {
    const flat = ROSTER.map(({ manager: _, ...m }) => m)
    const { model, agent, lines } = await setUp(
      [{ tool: "load_capability", args: { names: ["team-directory"] } }, "No org chart today."],
      { roster: flat }
    )
    const turn = await runTurn(agent, { message: "Who reports to Grace?" })
    expect(turn.answer).toBe("No org chart today.")
    expect(model.calls[1]!.offeredTools).toEqual([
      "list_capabilities",
      "load_capability",
      "find_teammate",
      "my_team"
    ])
    expect(lines).toContainEqual({
      level: "error",
      message: "sub-agent init failed; it is skipped for this turn",
      fields: {
        plugin: "team-directory",
        subAgent: "org_chart",
        error: "the roster has no reporting lines"
      }
    })
  })

  it("retries invalid arguments once, then does not run the tool again in the turn", async () => {
    const { agent } = await setUp([
      { tool: "load_capability", args: { names: ["team-directory"] } },
      { tool: "find_teammate", args: { name: 42 } },
      { tool: "find_teammate", args: { name: 42 } },
      { tool: "find_teammate", args: { name: "Zed" } },
      "I could not look that up."
    ])
    const turn = await runTurn(agent, { message: "Find 42." })
    const [, first, second, third] = toolMessages(turn.state.messages)
    expect(first!.content).toMatch(/^Invalid arguments for tool 'find_teammate':\n/)
    expect(first!.content).toMatch(/call 'find_teammate' again \(one retry\)\.$/)
    expect(second!.content).toMatch(/^Invalid arguments for tool 'find_teammate' again:\n/)
    expect(third!.content).toBe(
      "Tool 'find_teammate' is not run again in this turn: its arguments failed validation twice. Answer without it, or ask the user for what is missing."
    )
  })

  it("turns a throwing handler into a ToolMessage the model sees", async () => {
    const { agent } = await setUp([
      { tool: "load_capability", args: { names: ["team-directory"] } },
      { tool: "find_teammate", args: { name: "Zed" } },
      "Nobody is called Zed."
    ])
    const turn = await runTurn(agent, { message: "Find Zed." })
    expect(toolMessages(turn.state.messages)[1]!.content).toBe(
      "Tool 'find_teammate' failed: No teammate named 'Zed'."
    )
    expect(turn.answer).toBe("Nobody is called Zed.")
  })

  it("onError recovers an overloaded model, and lets any other error propagate", async () => {
    const busy = await setUp([new Error("529 overloaded")])
    const turn = await runTurn(busy.agent, { message: "Hi" })
    expect(turn.answer).toBe("The assistant is busy right now; please try again in a minute.")
    // afterModel does not run on a recovered error: there was no model result.
    expect(busy.team.usage.trace).toEqual([
      "team-admin:beforeModel",
      "team-directory:beforeModel",
      "team-admin:onError"
    ])

    const broken = await setUp([new Error("invalid api key")])
    await expect(runTurn(broken.agent, { message: "Hi" })).rejects.toThrow("invalid api key")
  })
})

describe("the hooks example on a real server", () => {
  it("reads shared state at boot, answers its public route without auth and its private one with it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-hooks-"))
    const team = makeTeamPlugins()
    const app = await createOracleApp({
      plugins: team.plugins,
      model: ScriptedChatModel.script(["Hello, Ada."]),
      logger: quietLogger,
      env: { PLUGBOARD_DATA_DIR: dir, THROTTLE_LIMIT: "1000" }
    })
    try {
      const { url } = await app.listen(0, "127.0.0.1")
      const signer = await generateSigner()
      const headers = {
        authorization: `Bearer ${await mintInvocation({ issuer: signer, audience: app.oracleDid, ttlSeconds: 600 })}`,
        "x-auth-type": "ucan",
        "content-type": "application/json"
      }
      const get = async (path: string, h: Record<string, string> = {}) => {
        const r = await fetch(`${url}${path}`, { headers: h })
        return { status: r.status, body: (await r.json()) as Record<string, unknown> }
      }

      expect(await get("/team/size")).toEqual({ status: 200, body: { members: 4 } })
      expect((await get("/team/usage")).status).toBe(401)
      expect(await get("/team/usage", headers)).toEqual({
        status: 200,
        body: { did: signer.did(), modelCalls: 0 }
      })

      const session = await fetch(`${url}/sessions`, { method: "POST", headers, body: "{}" })
      const { sessionId } = (await session.json()) as { sessionId: string }
      const sent = await fetch(`${url}/messages/${sessionId}`, {
        method: "POST",
        headers,
        body: JSON.stringify({ message: "Hi" })
      })
      expect(((await sent.json()) as { message: { content: string } }).message.content).toBe("Hello, Ada.")
      // The middleware ran in the server's turn; the private route sees it for this user.
      expect((await get("/team/usage", headers)).body.modelCalls).toBe(1)
    } finally {
      await app.close(2_000)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
