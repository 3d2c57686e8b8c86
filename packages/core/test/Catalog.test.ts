import {
  Catalog,
  CodeMode,
  MetaTools,
  type Plugin,
  type PluginManifest,
  type PluginTool,
  ResultPages,
  type Visibility
} from "@plugboard/core"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const tool = (name: string, extra: Partial<PluginTool> = {}): PluginTool => ({
  name,
  description: `Does ${name}.`,
  input: Schema.Struct({ city: Schema.String, days: Schema.optional(Schema.Number) }),
  handler: () => "ok",
  ...extra
})

const plugin = (
  name: string,
  options: {
    tools?: ReadonlyArray<PluginTool>
    visibility?: Visibility
    dependsOn?: ReadonlyArray<string>
    manifest?: Partial<PluginManifest>
    getTools?: () => ReadonlyArray<PluginTool>
  } = {}
): Plugin => ({
  name,
  manifest: {
    title: name.replace(/(^|-)([a-z])/g, (_, d, c: string) => `${d ? " " : ""}${c.toUpperCase()}`),
    summary: `The ${name} plugin.`,
    whenToUse: [`When ${name} helps.`],
    ...(options.visibility !== undefined ? { visibility: options.visibility } : {}),
    ...options.manifest
  },
  tools: options.tools ?? [],
  ...(options.dependsOn !== undefined ? { dependsOn: options.dependsOn } : {}),
  ...(options.getTools !== undefined ? { getTools: options.getTools } : {})
})

/** The boot errors of a catalog that must fail. */
const bootErrors = (plugins: ReadonlyArray<Plugin>, options?: Catalog.MakeOptions) => {
  const result = Catalog.make(plugins, options)
  if (Either.isRight(result)) throw new Error("expected the catalog to fail")
  return result.left
}

describe("Catalog.make: resolution", () => {
  it("prefixes every description with the manifest title and derives JSON Schema without $schema", () => {
    const catalog = Catalog.unsafeMake([plugin("climate-data", { tools: [tool("get_emissions")] })])
    const resolved = catalog.toolsByName.get("get_emissions")
    expect(resolved?.description).toBe("[Climate Data] Does get_emissions.")
    expect(resolved?.plugin).toBe("climate-data")
    expect(resolved?.parameters).toEqual({
      type: "object",
      required: ["city"],
      properties: { city: { type: "string" }, days: { type: "number" } },
      additionalProperties: false
    })
  })

  it("uses a tool's jsonSchema over the one derived from its input", () => {
    const jsonSchema = { type: "object", properties: { q: { type: "string" } } }
    const catalog = Catalog.unsafeMake([plugin("search", { tools: [tool("search", { jsonSchema })] })])
    expect(catalog.toolsByName.get("search")?.parameters).toBe(jsonSchema)
  })

  it("includes getTools() after tools, in declaration order", () => {
    const catalog = Catalog.unsafeMake([
      plugin("mixed", { tools: [tool("a_static")], getTools: () => [tool("b_dynamic"), tool("c_dynamic")] })
    ])
    expect(catalog.byName.get("mixed")?.tools.map((t) => t.name)).toEqual([
      "a_static",
      "b_dynamic",
      "c_dynamic"
    ])
    expect(catalog.toolsByName.has("c_dynamic")).toBe(true)
  })

  it("visibility defaults to on-demand; each tool inherits its plugin's", () => {
    const catalog = Catalog.unsafeMake([
      plugin("default-tier", { tools: [tool("d1")] }),
      plugin("pinned", { visibility: "always", tools: [tool("p1")] }),
      plugin("credits", { visibility: "silent", tools: [tool("s1")] })
    ])
    const entry = (n: string) => catalog.byName.get(n)
    expect(entry("default-tier")?.visibility).toBe("on-demand")
    expect(entry("default-tier")?.onDemandTools.map((t) => t.name)).toEqual(["d1"])
    expect(entry("pinned")?.alwaysTools.map((t) => t.name)).toEqual(["p1"])
    expect(entry("pinned")?.onDemandTools).toEqual([])
    expect(entry("credits")?.tools.map((t) => t.visibility)).toEqual(["silent"])
    expect(entry("credits")?.onDemandTools).toEqual([])
    expect(catalog.alwaysTools.map((t) => t.name)).toEqual(["p1"])
  })

  it("per-tool override (docs/spec/tiers.md): one always tool in an on-demand plugin, and the reverse", () => {
    const catalog = Catalog.unsafeMake([
      plugin("notes", { tools: [tool("notes_search", { visibility: "always" }), tool("notes_write")] }),
      plugin("memory", {
        visibility: "always",
        tools: [
          tool("memory_recall"),
          tool("memory_admin", { visibility: "on-demand" }),
          tool("memory_gc", { visibility: "silent" })
        ]
      })
    ])
    const notes = catalog.byName.get("notes")
    expect(notes?.visibility).toBe("on-demand")
    expect(notes?.alwaysTools.map((t) => t.name)).toEqual(["notes_search"])
    expect(notes?.onDemandTools.map((t) => t.name)).toEqual(["notes_write"])
    const memory = catalog.byName.get("memory")
    expect(memory?.alwaysTools.map((t) => t.name)).toEqual(["memory_recall"])
    expect(memory?.onDemandTools.map((t) => t.name)).toEqual(["memory_admin"])
    expect(catalog.toolsByName.get("memory_gc")?.visibility).toBe("silent")
    // Ordered by plugin name, then declaration: memory before notes.
    expect(catalog.alwaysTools.map((t) => t.name)).toEqual(["memory_recall", "notes_search"])
  })

  it("discoverable = not silent", () => {
    const catalog = Catalog.unsafeMake([
      plugin("a", { visibility: "always" }),
      plugin("b"),
      plugin("c", { visibility: "silent", manifest: { whenToUse: [] } })
    ])
    expect(catalog.entries.map((e) => [e.name, e.discoverable])).toEqual([
      ["a", true],
      ["b", true],
      ["c", false]
    ])
  })

  it("collects manifest warnings as [boot-warning] lines and still boots", () => {
    const catalog = Catalog.unsafeMake([plugin("tagged", { manifest: { tags: ["Loud"] } })])
    expect(catalog.warnings).toEqual([
      "[boot-warning] Plugin 'tagged' manifest field 'tags[0]' has uppercase letters ('Loud'); tags should be lowercase."
    ])
  })
})

describe("Catalog.make: dependsOn order", () => {
  it("puts dependencies first and keeps input order for ties", () => {
    const catalog = Catalog.unsafeMake([
      plugin("app", { dependsOn: ["db", "auth"] }),
      plugin("zeta"),
      plugin("auth", { dependsOn: ["db"] }),
      plugin("db"),
      plugin("alpha")
    ])
    expect(catalog.entries.map((e) => e.name)).toEqual(["zeta", "db", "auth", "app", "alpha"])
  })

  it("returns an already valid order unchanged", () => {
    const names = ["a", "b", "c", "d", "e"]
    const catalog = Catalog.unsafeMake(names.map((n, i) => plugin(n, { dependsOn: names.slice(0, i) })))
    expect(catalog.entries.map((e) => e.name)).toEqual(names)
  })

  it("property: every plugin comes after its dependencies; without edges the order is the input", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }).chain((n) =>
          fc.tuple(
            fc.constant(n),
            // Edges only from later to earlier registrations in a random permutation: acyclic.
            fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 60 }),
            fc.shuffledSubarray(
              Array.from({ length: n }, (_, i) => i),
              { minLength: n }
            )
          )
        ),
        ([n, edges, rank]) => {
          const deps = Array.from({ length: n }, () => new Set<string>())
          for (const [a, b] of edges) {
            const [from, to] = (rank[a] as number) > (rank[b] as number) ? [a, b] : [b, a]
            if (from !== to) deps[from]?.add(`p${to}`)
          }
          const catalog = Catalog.unsafeMake(
            Array.from({ length: n }, (_, i) => plugin(`p${i}`, { dependsOn: [...(deps[i] as Set<string>)] }))
          )
          const at = new Map(catalog.entries.map((e, i) => [e.name, i]))
          expect(catalog.entries).toHaveLength(n)
          deps.forEach((ds, i) => {
            for (const d of ds) expect(at.get(d) as number).toBeLessThan(at.get(`p${i}`) as number)
          })
          if (edges.length === 0)
            expect(catalog.entries.map((e) => e.name)).toEqual(Array.from({ length: n }, (_, i) => `p${i}`))
        }
      )
    )
  })
})

describe("Catalog.make: boot errors", () => {
  it("a tool name collision names both plugins", () => {
    const error = bootErrors([
      plugin("weather", { tools: [tool("lookup")] }),
      plugin("geo", { tools: [tool("lookup")] })
    ])
    expect(error._tag).toBe("CatalogBootError")
    expect(error.errors).toEqual([
      "Plugin 'geo' registers tool 'lookup', which plugin 'weather' already registers (tool names are one flat namespace)."
    ])
    expect(error.lines).toEqual([
      "[boot-error] Plugin 'geo' registers tool 'lookup', which plugin 'weather' already registers (tool names are one flat namespace)."
    ])
  })

  it("the meta-tool names are reserved, also via getTools()", () => {
    const error = bootErrors([
      plugin("sneaky", { tools: [tool("list_capabilities")], getTools: () => [tool("load_capability")] })
    ])
    expect(error.errors).toEqual([
      "Plugin 'sneaky' registers tool 'list_capabilities', a name reserved for the runtime's meta-tools.",
      "Plugin 'sneaky' registers tool 'load_capability', a name reserved for the runtime's meta-tools."
    ])
  })

  it("a dependency cycle names the plugins in it", () => {
    const error = bootErrors([
      plugin("free"),
      plugin("a", { dependsOn: ["c"] }),
      plugin("b", { dependsOn: ["a"] }),
      plugin("c", { dependsOn: ["b"] }),
      plugin("self", { dependsOn: ["self"] })
    ])
    expect(error.errors).toEqual([
      "Plugin 'a' is in a dependency cycle: 'a' -> 'c' -> 'b' -> 'a'.",
      "Plugin 'self' is in a dependency cycle: 'self' -> 'self'."
    ])
  })

  it("a missing dependency names both plugins", () => {
    const error = bootErrors([plugin("app", { dependsOn: ["db"] })])
    expect(error.errors).toEqual(["Plugin 'app' depends on 'db', which is not registered."])
  })

  it("a plugin name registered twice", () => {
    const error = bootErrors([
      plugin("dup", { tools: [tool("t1")] }),
      plugin("other"),
      plugin("dup", { tools: [tool("t1")] })
    ])
    // Only the duplicate is reported: the twin's identical tools are not counted as collisions.
    expect(error.errors).toEqual(["Plugin 'dup' is registered more than once (#0 and #2)."])
  })

  it("a name that is not kebab-case, or no name at all", () => {
    const error = bootErrors([
      plugin("Weather_App"),
      { ...plugin("x"), name: 7 } as unknown as Plugin,
      null as unknown as Plugin
    ])
    expect(error.errors).toEqual([
      "Plugin 'Weather_App' has an invalid name: plugin names are kebab-case (lowercase letters, digits and single dashes, starting with a letter).",
      "Plugin #1 has no name (expected a kebab-case string, got number).",
      "Plugin #2 must be an object (got null)."
    ])
    const sparse: Plugin[] = [plugin("first")]
    sparse[2] = plugin("third")
    expect(bootErrors(sparse).errors).toEqual(["Plugin #1 must be an object (got undefined)."])
  })

  it("a silent plugin whose tool asks to be offered is a contradiction", () => {
    const error = bootErrors([
      plugin("credits", {
        visibility: "silent",
        manifest: { whenToUse: [] },
        tools: [
          tool("charge", { visibility: "always" }),
          tool("refund", { visibility: "on-demand" }),
          tool("ok", { visibility: "silent" })
        ]
      })
    ])
    expect(error.errors).toEqual([
      "Plugin 'credits' is silent but its tool 'charge' sets visibility 'always': a silent plugin is never offered to the model (drop the override or change the plugin's visibility).",
      "Plugin 'credits' is silent but its tool 'refund' sets visibility 'on-demand': a silent plugin is never offered to the model (drop the override or change the plugin's visibility)."
    ])
  })

  it("manifest errors, including examples checked against tools and getTools()", () => {
    const error = bootErrors([
      plugin("weather", {
        tools: [tool("get_current_weather")],
        getTools: () => [tool("get_weather_forecast")],
        manifest: {
          summary: " ",
          examples: [
            { user: "Berlin?", tool: "get_current_weather" },
            { user: "Tokyo week?", tool: "get_weather_forecast" },
            { user: "?", tool: "foo" }
          ]
        }
      })
    ])
    expect(error.errors).toEqual([
      "Plugin 'weather' manifest field 'summary' must not be empty.",
      "Plugin 'weather' manifest example references unknown tool 'foo'."
    ])
  })

  it("getTools() that throws is a boot error naming the plugin, not a crash", () => {
    const error = bootErrors([
      plugin("flaky", {
        getTools: () => {
          throw new Error("upstream unreachable")
        }
      })
    ])
    expect(error.errors).toEqual(["Plugin 'flaky' getTools() threw: upstream unreachable"])
  })

  it("malformed tools: bad name, duplicate in one plugin, bad visibility, no schema, underivable schema", () => {
    const error = bootErrors([
      plugin("broken", {
        tools: [
          tool("has space"),
          tool("twice"),
          tool("twice"),
          tool("vis", { visibility: "sometimes" as Visibility }),
          tool("no_input", { input: undefined as never }),
          tool("opaque", { input: Schema.declare((u): u is Date => u instanceof Date) as never }),
          tool("no_handler", { handler: undefined as never })
        ]
      })
    ])
    expect(error.errors).toEqual([
      "Plugin 'broken' tool #0 has an invalid name 'has space' (1-64 letters, digits, '_' or '-').",
      "Plugin 'broken' registers tool 'twice' more than once.",
      "Plugin 'broken' tool 'vis' has unknown visibility 'sometimes' (expected one of 'always', 'on-demand', 'silent').",
      "Plugin 'broken' tool 'no_input' needs an input schema (or a jsonSchema).",
      "Plugin 'broken' tool 'opaque' input schema cannot be turned into JSON Schema: the input itself has no JSON Schema form (Missing annotation): use a schema whose encoded form is JSON (a string, number, boolean, array or struct) instead, or give the tool a jsonSchema.",
      "Plugin 'broken' tool 'no_handler' handler must be a function."
    ])
  })

  it("collects every error of every plugin together, with the warnings", () => {
    const error = bootErrors([
      plugin("Bad-Name"),
      plugin("one", { tools: [tool("shared")], dependsOn: ["ghost"], manifest: { tags: ["Up"] } }),
      plugin("two", { tools: [tool("shared"), tool("list_capabilities")], dependsOn: ["three"] }),
      plugin("three", { dependsOn: ["two"], manifest: { title: undefined as never } })
    ])
    expect(error.errors).toEqual([
      "Plugin 'Bad-Name' has an invalid name: plugin names are kebab-case (lowercase letters, digits and single dashes, starting with a letter).",
      "Plugin 'three' manifest is missing required field 'title'.",
      "Plugin 'two' registers tool 'shared', which plugin 'one' already registers (tool names are one flat namespace).",
      "Plugin 'two' registers tool 'list_capabilities', a name reserved for the runtime's meta-tools.",
      "Plugin 'one' depends on 'ghost', which is not registered.",
      "Plugin 'two' is in a dependency cycle: 'two' -> 'three' -> 'two'."
    ])
    expect(error.warnings).toEqual([
      "Plugin 'one' manifest field 'tags[0]' has uppercase letters ('Up'); tags should be lowercase."
    ])
    expect(error.warningLines).toEqual([
      "[boot-warning] Plugin 'one' manifest field 'tags[0]' has uppercase letters ('Up'); tags should be lowercase."
    ])
    expect(error.lines).toHaveLength(6)
    expect(error.lines.every((l) => l.startsWith("[boot-error] Plugin "))).toBe(true)
  })

  it("unsafeMake throws the CatalogBootError; reserved names are configurable", () => {
    expect(() => Catalog.unsafeMake([plugin("a", { dependsOn: ["b"] })])).toThrow(
      "[boot-error] Plugin 'a' depends on 'b', which is not registered."
    )
    const error = bootErrors([plugin("a", { tools: [tool("mine")] })], { reservedToolNames: ["mine"] })
    expect(error.errors).toEqual(["Plugin 'a' registers tool 'mine', a name the host reserves."])
  })

  it("the meta-tools' names stay reserved whatever reservedToolNames says (options only add names)", () => {
    for (const reservedToolNames of [[], ["mine"], undefined]) {
      for (const name of MetaTools.definitions.map((d) => d.name)) {
        const options = reservedToolNames === undefined ? {} : { reservedToolNames }
        const error = bootErrors([plugin("evil", { tools: [tool(name)], visibility: "always" })], options)
        expect(error.errors).toEqual([
          `Plugin 'evil' registers tool '${name}', a name reserved for the runtime's meta-tools.`
        ])
      }
    }
    // The added name is reserved too, next to the meta-tools'.
    const both = bootErrors([plugin("a", { tools: [tool("mine"), tool("load_capability")] })], {
      reservedToolNames: ["mine"]
    })
    expect(both.errors).toHaveLength(2)
  })
})

describe("Catalog.make: per-request tools and the meta-tools", () => {
  it("a plugin whose every tool comes per request: an example naming one warns instead of failing boot", () => {
    const mcp: Plugin = {
      ...plugin("sandbox", {
        manifest: { examples: [{ user: "run it", tool: "sandbox_exec" }] }
      }),
      getRequestTools: () => [tool("sandbox_exec")]
    }
    const catalog = Catalog.unsafeMake([mcp])
    expect(catalog.warnings).toEqual([
      "[boot-warning] Plugin 'sandbox' manifest example references tool 'sandbox_exec', which is not registered at boot (assumed to come from getRequestTools)."
    ])
  })

  it("a plugin with boot-time tools gets the spec's hard check, request hooks or not (as QiForge)", () => {
    const mixed: Plugin = {
      ...plugin("sandbox", {
        tools: [tool("sandbox_status")],
        manifest: {
          examples: [
            { user: "status?", tool: "sandbox_status" },
            { user: "run it", tool: "sandbox_exec" }
          ]
        }
      }),
      getRequestTools: () => [tool("sandbox_exec")]
    }
    expect(bootErrors([mixed]).errors).toEqual([
      "Plugin 'sandbox' manifest example references unknown tool 'sandbox_exec'."
    ])
  })

  it("reserves exactly the names MetaTools registers, call_tool, read_result and run_code included", () => {
    expect(Catalog.RESERVED_TOOL_NAMES).toEqual([
      MetaTools.LIST_CAPABILITIES,
      MetaTools.LOAD_CAPABILITY,
      MetaTools.CALL_TOOL,
      ResultPages.READ_RESULT,
      CodeMode.RUN_CODE
    ])
    expect(MetaTools.META_TOOL_NAMES).toEqual(Catalog.RESERVED_TOOL_NAMES)
    expect(bootErrors([plugin("relay", { tools: [tool("call_tool")] })]).errors).toEqual([
      "Plugin 'relay' registers tool 'call_tool', a name reserved for the runtime's meta-tools."
    ])
    expect(bootErrors([plugin("coder", { tools: [tool("run_code")] })]).errors).toEqual([
      "Plugin 'coder' registers tool 'run_code', a name reserved for the runtime's meta-tools."
    ])
  })
})

describe("Catalog.make never throws", () => {
  it("clips huge names and escapes control characters, the same way in catalog and manifest messages", () => {
    const huge = `x${"-y".repeat(5_000)}`
    const error = bootErrors([
      { ...plugin("a"), name: huge, manifest: { title: "T", summary: "" } as PluginManifest },
      plugin("b\nc")
    ])
    const shownHuge = `${huge.slice(0, 200)}…`
    expect(error.errors).toEqual([
      `Plugin '${shownHuge}' manifest field 'summary' must not be empty.`,
      `Plugin '${shownHuge}' manifest field 'whenToUse' needs at least one non-empty entry when visibility is 'on-demand' (only silent plugins may omit it).`,
      "Plugin 'b\\u000ac' has an invalid name: plugin names are kebab-case (lowercase letters, digits and single dashes, starting with a letter)."
    ])
  })

  it("property: any list of anything gives a Right or a CatalogBootError with [boot-error] lines", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.anything({ withNullPrototype: true, withSparseArray: true }),
            fc.record({
              name: fc.constantFrom("a", "b", "Bad"),
              manifest: fc.anything(),
              tools: fc.anything()
            }),
            fc.constant(plugin("ok", { tools: [tool("ok_tool")] }))
          ),
          { maxLength: 6 }
        ),
        (plugins) => {
          const result = Catalog.make(plugins as Plugin[])
          if (Either.isLeft(result)) {
            expect(result.left.errors.length).toBeGreaterThan(0)
            for (const line of result.left.lines) expect(line.startsWith("[boot-error] ")).toBe(true)
          }
        }
      ),
      { numRuns: 300 }
    )
  })

  it("getters that throw anywhere become errors naming the plugin", () => {
    const boom = () => {
      throw new Error("boom")
    }
    const hostileTool = Object.defineProperty({ ...tool("x") }, "description", { get: boom })
    const hostileManifest = Object.defineProperty(
      { title: "T", summary: "s", whenToUse: ["w"] },
      "visibility",
      { get: boom, enumerable: true }
    )
    const error = bootErrors([
      plugin("a", { tools: [hostileTool] }),
      { ...plugin("b"), manifest: hostileManifest as PluginManifest },
      Object.defineProperty(plugin("c"), "getRequestTools", { get: boom }),
      Object.defineProperty(plugin("d"), "dependsOn", { get: boom }),
      plugin("e", { tools: [tool("bad_json", { jsonSchema: "nope" as never })] })
    ])
    expect(error.errors).toEqual([
      "Plugin 'a' tool #0 could not be read (boom).",
      "Plugin 'b' manifest field 'visibility' could not be read (boom).",
      "Plugin 'c' could not be read (boom).",
      "Plugin 'd' field 'dependsOn' could not be read (boom).",
      "Plugin 'e' tool 'bad_json' jsonSchema must be an object."
    ])
  })
})
