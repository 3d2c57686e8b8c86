/**
 * The catalog's boot-time hooks (middlewares, sub-agents), the JSON Schema it offers tools with,
 * and the resolution of per-request tools and sub-agents by the same rules as boot-time tools.
 */
import {
  Catalog,
  type Plugin,
  type PluginManifest,
  type PluginMiddleware,
  type PluginTool,
  type SubAgentSpec,
  type Visibility
} from "@plugboard/core"
import { Effect, Either, Schema } from "effect"
import { describe, expect, it } from "vitest"

const tool = (name: string, extra: Partial<PluginTool> = {}): PluginTool => ({
  name,
  description: `Does ${name}.`,
  input: Schema.Struct({ q: Schema.String }),
  handler: () => "ok",
  ...extra
})

const plugin = (name: string, visibility?: Visibility, extra: Partial<Plugin> = {}): Plugin => ({
  name,
  manifest: {
    title: `Title ${name}`,
    summary: `The ${name} plugin.`,
    whenToUse: [`When ${name} helps.`],
    ...(visibility === undefined ? {} : { visibility })
  },
  tools: [],
  ...extra
})

const subAgent = (name: string, extra: Partial<SubAgentSpec> = {}): SubAgentSpec => ({
  name,
  description: `Delegates to ${name}.`,
  run: (task) => `${name} did ${task}`,
  ...extra
})

const bootErrors = (plugins: ReadonlyArray<Plugin>): ReadonlyArray<string> => {
  const result = Catalog.make(plugins)
  if (Either.isRight(result)) throw new Error("expected the catalog to fail")
  return result.left.errors
}

const left = <A, E>(e: Either.Either<A, E>): E => {
  if (Either.isRight(e)) throw new Error("expected an error")
  return e.left
}
const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected success, got ${String(e.left)}`)
  return e.right
}

describe("Catalog.toolParameters", () => {
  it("derives JSON Schema from the input without $schema, once per schema object", () => {
    const input = Schema.Struct({ city: Schema.String })
    const a = right(Catalog.toolParameters({ input }))
    expect(a).toEqual({
      type: "object",
      required: ["city"],
      properties: { city: { type: "string" } },
      additionalProperties: false
    })
    expect(right(Catalog.toolParameters({ input }))).toBe(a)
  })

  it("prefers jsonSchema, and is the schema the catalog offers", () => {
    const jsonSchema = { type: "object", properties: {} }
    expect(right(Catalog.toolParameters({ input: Schema.Struct({}), jsonSchema }))).toBe(jsonSchema)
    const t = tool("x")
    const catalog = Catalog.unsafeMake([plugin("p", undefined, { tools: [t] })])
    expect(catalog.toolsByName.get("x")?.parameters).toBe(right(Catalog.toolParameters(t)))
  })

  it("explains a missing or inexpressible schema instead of throwing", () => {
    expect(left(Catalog.toolParameters({ input: undefined as never }))).toBe(
      "needs an input schema (or a jsonSchema)"
    )
    const opaque = Schema.declare((u): u is Date => u instanceof Date)
    expect(left(Catalog.toolParameters({ input: opaque }))).toMatch(
      /^input schema cannot be turned into JSON Schema: the input itself has no JSON Schema form \(Missing annotation\): .+, or give the tool a jsonSchema$/
    )
  })
})

describe("Catalog.make: boot-time hooks", () => {
  it("reads getMiddlewares and getSubAgents once, at boot", () => {
    let reads = 0
    const p = plugin("counted", "always", {
      getMiddlewares: () => {
        reads++
        return []
      },
      getSubAgents: () => {
        reads++
        return []
      }
    })
    const catalog = Catalog.unsafeMake([p])
    expect(reads).toBe(2)
    expect(catalog.middlewares).toEqual([])
    expect(catalog.subAgents).toEqual([])
    expect(reads).toBe(2)
  })

  it("lists middlewares in catalog (dependency) order, each plugin's field before getMiddlewares()", () => {
    const m = (name: string): PluginMiddleware => ({ name, beforeModel: () => {} })
    const catalog = Catalog.unsafeMake([
      plugin("zeta", "silent", {
        dependsOn: ["alpha"],
        middlewares: [m("z1")],
        getMiddlewares: () => [m("z2")]
      }),
      plugin("alpha", "silent", { getMiddlewares: () => [m("a1")], middlewares: [m("a0")] }),
      plugin("plain")
    ])
    expect(catalog.middlewares.map((o) => `${o.plugin}:${o.middleware.name}`)).toEqual([
      "alpha:a0",
      "alpha:a1",
      "zeta:z1",
      "zeta:z2"
    ])
    expect(catalog.byName.get("zeta")?.middlewares.map((x) => x.name)).toEqual(["z1", "z2"])
  })

  it("resolves boot-time sub-agents as tools: prefix, task schema, the plugin's visibility, a handler", async () => {
    const catalog = Catalog.unsafeMake([
      plugin("helpers", "always", { getSubAgents: () => [subAgent("summarizer")] }),
      plugin("quiet", "silent", { getSubAgents: () => [subAgent("internal_agent")] })
    ])
    const [summarizer, internal] = catalog.subAgents
    expect(summarizer?.plugin).toBe("helpers")
    expect(summarizer?.spec.name).toBe("summarizer")
    expect(summarizer?.tool).toMatchObject({
      name: "summarizer",
      plugin: "helpers",
      description: "[Title helpers] Delegates to summarizer.",
      visibility: "always",
      parameters: right(Catalog.toolParameters({ input: Catalog.SubAgentInput }))
    })
    expect(await summarizer?.tool.tool.handler({ task: "a text" }, undefined as never)).toBe(
      "summarizer did a text"
    )
    expect(internal?.tool.visibility).toBe("silent")
    // Sub-agents are not catalog tools: the offer and the gate take them per request.
    expect(catalog.toolsByName.has("summarizer")).toBe(false)
    expect(catalog.withRequestHooks).toEqual([])
  })

  it("lists the plugins with per-request hooks, in catalog order", () => {
    const catalog = Catalog.unsafeMake([
      plugin("b", undefined, { getRequestSubAgents: () => [] }),
      plugin("none"),
      plugin("a", undefined, { getRequestTools: () => [] })
    ])
    expect(catalog.withRequestHooks.map((e) => e.name)).toEqual(["b", "a"])
    expect(catalog.byName.get("none")?.hasRequestHooks).toBe(false)
  })

  it("accepts a manifest example naming a sub-agent; per-request sub-agents only warn", () => {
    const manifest = (tool: string): Partial<Plugin> => ({
      manifest: {
        title: "R",
        summary: "Research.",
        whenToUse: ["research"],
        examples: [{ user: "look it up", tool }]
      } satisfies PluginManifest
    })
    expect(
      Either.isRight(
        Catalog.make([
          plugin("r", undefined, { ...manifest("researcher"), getSubAgents: () => [subAgent("researcher")] })
        ])
      )
    ).toBe(true)
    const later = Catalog.unsafeMake([
      plugin("s", undefined, { ...manifest("reader"), getRequestSubAgents: () => [subAgent("reader")] })
    ])
    expect(later.warnings).toEqual([
      "[boot-warning] Plugin 's' manifest example references tool 'reader', which is not registered at boot (assumed to come from getRequestSubAgents)."
    ])
  })

  it("reports every bad hook as a boot error naming the plugin", () => {
    const boom = () => {
      throw new Error("boom")
    }
    expect(
      bootErrors([
        plugin("a", undefined, { getMiddlewares: boom }),
        plugin("b", undefined, { getSubAgents: boom }),
        plugin("c", undefined, { getSubAgents: () => "nope" as never }),
        plugin("d", undefined, { middlewares: {} as never }),
        plugin("e", undefined, { middlewares: [null as never, { afterModel: 3 as never }] }),
        plugin("f", undefined, { getMiddlewares: () => 1 as never }),
        plugin("g", undefined, {
          getSubAgents: () => [
            subAgent("bad name"),
            subAgent("no_run", { run: undefined as never }),
            subAgent("bad_init", { init: "x" as never }),
            "junk" as never,
            subAgent("twice"),
            subAgent("twice")
          ]
        })
      ])
    ).toEqual([
      "Plugin 'a' getMiddlewares() threw: boom",
      "Plugin 'b' getSubAgents() threw: boom",
      "Plugin 'c' getSubAgents() must return an array.",
      "Plugin 'd' field 'middlewares' must be an array.",
      "Plugin 'e' field 'middlewares' middleware #0 must be an object.",
      "Plugin 'e' field 'middlewares' middleware #1 afterModel must be a function.",
      "Plugin 'f' getMiddlewares() must return an array.",
      "Plugin 'g' sub-agent #0 has an invalid name 'bad name' (1-64 letters, digits, '_' or '-').",
      "Plugin 'g' sub-agent 'no_run' run must be a function.",
      "Plugin 'g' sub-agent 'bad_init' init must be a function when set.",
      "Plugin 'g' sub-agent #3 must be an object.",
      "Plugin 'g' registers sub-agent 'twice' more than once."
    ])
  })

  it("puts sub-agents in the one tool namespace: a collision names both plugins", () => {
    expect(
      bootErrors([
        plugin("tools", undefined, { tools: [tool("lookup")] }),
        plugin("agents", undefined, {
          tools: [tool("own_tool")],
          getSubAgents: () => [subAgent("lookup"), subAgent("load_capability"), subAgent("own_tool")]
        }),
        plugin("more", undefined, { getSubAgents: () => [subAgent("shared_agent")] }),
        plugin("again", undefined, { getSubAgents: () => [subAgent("shared_agent")] })
      ])
    ).toEqual([
      "Plugin 'agents' registers sub-agent 'own_tool' more than once.",
      "Plugin 'agents' registers sub-agent 'lookup', which plugin 'tools' already registers (tool names are one flat namespace).",
      "Plugin 'agents' registers sub-agent 'load_capability', a name reserved for the runtime's meta-tools.",
      "Plugin 'again' registers sub-agent 'shared_agent', which plugin 'more' already registers (tool names are one flat namespace)."
    ])
  })
})

describe("Catalog.resolveRequestTool / resolveSubAgent", () => {
  const catalog = Catalog.unsafeMake([
    plugin("mcp", undefined, { tools: [tool("boot_tool")], getRequestTools: () => [] }),
    plugin("pinned", "always", { getSubAgents: () => [subAgent("boot_agent")] }),
    plugin("quiet", "silent")
  ])

  it("resolves a request tool like a boot-time tool: prefix, visibility (override), schema", () => {
    const t = tool("mcp_search", { visibility: "always" })
    const resolved = right(Catalog.resolveRequestTool(catalog, "mcp", t))
    expect(resolved).toMatchObject({
      name: "mcp_search",
      plugin: "mcp",
      description: "[Title mcp] Does mcp_search.",
      visibility: "always",
      tool: t
    })
    expect(resolved.parameters).toBe(right(Catalog.toolParameters(t)))
    expect(right(Catalog.resolveRequestTool(catalog, "mcp", tool("plain"))).visibility).toBe("on-demand")
    expect(right(Catalog.resolveRequestTool(catalog, "quiet", tool("hidden"))).visibility).toBe("silent")
  })

  it("rejects a bad request tool with every reason, naming the plugin", () => {
    const invalid = (t: unknown, plugin = "mcp") =>
      left(Catalog.resolveRequestTool(catalog, plugin, t as PluginTool))
    expect(invalid(null)).toMatchObject({
      reason: "invalid-tool",
      plugin: "mcp",
      errors: ["Plugin 'mcp' per-request tool must be an object (got null)."]
    })
    expect(invalid(tool("x", { handler: 1 as never, visibility: "sometimes" as never })).errors).toEqual([
      "Plugin 'mcp' per-request tool 'x' handler must be a function.",
      "Plugin 'mcp' per-request tool 'x' has unknown visibility 'sometimes' (expected one of 'always', 'on-demand', 'silent')."
    ])
    expect(invalid(tool("loud", { visibility: "always" }), "quiet").errors).toEqual([
      "Plugin 'quiet' is silent but its per-request tool 'loud' sets visibility 'always': a silent plugin is never offered to the model (drop the override or change the plugin's visibility)."
    ])
    expect(invalid(tool("no_schema", { input: undefined as never })).errors).toEqual([
      "Plugin 'mcp' per-request tool 'no_schema' needs an input schema (or a jsonSchema)."
    ])
    expect(invalid(tool("x"), "ghost")).toMatchObject({ reason: "unknown-plugin", plugin: "ghost" })
  })

  it("rejects a name a meta-tool, a catalog tool or a boot-time sub-agent already has", () => {
    for (const [name, owner] of [
      ["load_capability", "a name reserved for the runtime's meta-tools"],
      ["boot_tool", "a name plugin 'mcp' registers at boot"],
      ["boot_agent", "a name plugin 'pinned' registers at boot"]
    ] as const) {
      const error = left(Catalog.resolveRequestTool(catalog, "mcp", tool(name)))
      expect(error.reason).toBe("name-taken")
      expect(error.message).toBe(
        `Plugin 'mcp' per-request tool '${name}' takes ${owner} (tool names are one flat namespace).`
      )
    }
  })

  it("rejects a name the host reserved at make, as boot-time tools are", () => {
    const hosted = Catalog.unsafeMake([plugin("mcp")], { reservedToolNames: ["host_search"] })
    const error = left(Catalog.resolveRequestTool(hosted, "mcp", tool("host_search")))
    expect(error.reason).toBe("name-taken")
    expect(error.message).toBe(
      "Plugin 'mcp' per-request tool 'host_search' takes a name the host reserves (tool names are one flat namespace)."
    )
    expect(left(Catalog.resolveSubAgent(hosted, "mcp", subAgent("host_search"))).reason).toBe("name-taken")
    // Without the option the name is free.
    expect(
      Catalog.resolveRequestTool(Catalog.unsafeMake([plugin("mcp")]), "mcp", tool("host_search"))._tag
    ).toBe("Right")
  })

  it("resolves a per-request sub-agent as a tool of its plugin, and rejects a broken one", () => {
    const spec = subAgent("web_researcher")
    const resolved = right(Catalog.resolveSubAgent(catalog, "pinned", spec))
    expect(resolved.spec).toBe(spec)
    expect(resolved.tool).toMatchObject({
      name: "web_researcher",
      plugin: "pinned",
      visibility: "always",
      description: "[Title pinned] Delegates to web_researcher."
    })
    expect(
      left(Catalog.resolveSubAgent(catalog, "pinned", subAgent("x", { run: 1 as never }))).errors
    ).toEqual(["Plugin 'pinned' sub-agent 'x' run must be a function."])
    expect(left(Catalog.resolveSubAgent(catalog, "pinned", subAgent("boot_agent"))).reason).toBe("name-taken")
  })
})

describe("shared state: Catalog.withSharedState and mergeSharedState", () => {
  it("lists the plugins with getSharedState in catalog (dependency) order", () => {
    const catalog = Catalog.unsafeMake([
      plugin("profile", undefined, { dependsOn: ["memory"], getSharedState: () => ({ userProfile: {} }) }),
      plugin("plain"),
      plugin("memory", "always", { getSharedState: async () => ({ store: "sqlite" }) })
    ])
    expect(catalog.withSharedState.map((e) => e.name)).toEqual(["memory", "profile"])
    expect(bootErrors([plugin("odd", undefined, { getSharedState: {} as never })])).toEqual([
      "Plugin 'odd' getSharedState must be a function."
    ])
  })

  it("merges each plugin's object into one namespace", () => {
    const merged = right(
      Catalog.mergeSharedState([
        { plugin: "memory", value: { userProfile: { name: "Ada" } } },
        { plugin: "prefs", value: { units: "metric", __proto__: 1 } },
        { plugin: "empty", value: {} }
      ])
    )
    expect(merged).toEqual({ userProfile: { name: "Ada" }, units: "metric" })
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype)
    const proto = right(Catalog.mergeSharedState([{ plugin: "p", value: JSON.parse('{"__proto__": 1}') }]))
    expect(Object.keys(proto)).toEqual(["__proto__"])
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype)
  })

  it("reports every failure, non-object and key taken twice, naming the plugins", () => {
    const error = left(
      Catalog.mergeSharedState([
        { plugin: "memory", value: { userProfile: 1, store: 2 } },
        { plugin: "copycat", value: { userProfile: 3, own: 4 } },
        { plugin: "down", failure: new Error("database is locked") },
        { plugin: "list", value: [1] },
        { plugin: "nothing", value: undefined }
      ])
    )
    expect(error.lines).toEqual([
      "[boot-error] Plugin 'copycat' shared state key 'userProfile' is already registered by plugin 'memory' (shared state is one namespace).",
      "[boot-error] Plugin 'down' getSharedState failed: database is locked",
      "[boot-error] Plugin 'list' getSharedState must return an object (got an array).",
      "[boot-error] Plugin 'nothing' getSharedState must return an object (got undefined)."
    ])
  })
})

describe("shared state: Catalog.readSharedState", () => {
  const read = (catalog: Catalog.Catalog, host?: Record<string, unknown>) =>
    Effect.runPromise(Effect.either(Catalog.readSharedState(catalog, host)))

  it("calls each getSharedState once, dependencies first, and merges them with the host's entries", async () => {
    const calls: Array<string> = []
    const catalog = Catalog.unsafeMake([
      plugin("profile", undefined, {
        dependsOn: ["memory"],
        getSharedState: () => {
          calls.push("profile")
          return { userProfile: { name: "Ada" } }
        }
      }),
      plugin("memory", "always", {
        getSharedState: async () => {
          calls.push("memory")
          return { store: "sqlite" }
        }
      })
    ])
    const shared = Either.getOrThrow(await read(catalog, { "host.ledger": "the ledger" }))
    expect(calls).toEqual(["memory", "profile"])
    expect(shared).toEqual({ store: "sqlite", userProfile: { name: "Ada" }, "host.ledger": "the ledger" })
  })

  it("reports a throwing or rejecting hook and a key the host holds, naming the plugins", async () => {
    const catalog = Catalog.unsafeMake([
      plugin("sync-throw", undefined, {
        getSharedState: () => {
          throw new Error("no config file")
        }
      }),
      plugin("rejects", undefined, { getSharedState: () => Promise.reject(new Error("database is locked")) }),
      plugin("squatter", undefined, { getSharedState: () => ({ "host.ledger": 0, own: 1 }) })
    ])
    const error = await read(catalog, { "host.ledger": "the ledger" })
    expect(Either.isLeft(error) && error.left.lines).toEqual([
      "[boot-error] Plugin 'squatter' shared state key 'host.ledger' is reserved by the host.",
      "[boot-error] Plugin 'sync-throw' getSharedState failed: no config file",
      "[boot-error] Plugin 'rejects' getSharedState failed: database is locked"
    ])
  })
})
