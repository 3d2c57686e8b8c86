import {
  Catalog,
  CatalogSource,
  LoadedPlugins,
  MetaTools,
  Offer,
  SystemPrompt,
  TokenBudget,
  TokenCounter,
  ToolOutput,
  validateManifest
} from "@plugboard/core"
import { Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plugin, tool } from "./runtime/fixtures.js"

const schema = { type: "object", properties: { text: { type: "string" } } } as const

const sourceTool = (name: string, description = `Does ${name}.`): CatalogSource.SourceTool => ({
  name,
  description,
  inputSchema: schema,
  call: (args) => ToolOutput.text(`${name}:${JSON.stringify(args)}`)
})

const facts: CatalogSource.McpServerFacts = {
  serverInfo: { name: "example-servers/everything", title: "Everything", version: "1.0.0" },
  instructions:
    "Exercises every feature of the protocol. Use it to echo text back. Use it to add two numbers.",
  tools: [
    { name: "echo", description: "Echoes back the input." },
    { name: "add", description: "Adds two numbers." }
  ]
}

const mcpSpec = (
  name: string,
  tools: ReadonlyArray<CatalogSource.SourceTool>,
  extra: Partial<CatalogSource.DerivedPluginSpec> = {}
): CatalogSource.DerivedPluginSpec => ({
  name,
  source: { kind: "mcp", server: name },
  manifest: CatalogSource.deriveMcpManifest(name, { ...facts, tools }),
  tools,
  ...extra
})

describe("CatalogSource.deriveMcpManifest", () => {
  it("takes the title from serverInfo, the summary and whenToUse from the instructions", () => {
    const m = CatalogSource.deriveMcpManifest("everything", facts)
    expect(m.title).toBe("Everything")
    expect(m.summary).toBe("Exercises every feature of the protocol.")
    expect(m.whenToUse).toEqual(["Use it to echo text back.", "Use it to add two numbers."])
    expect(m.tags).toEqual(["add", "echo"])
    expect(validateManifest(m, "everything", ["echo", "add"])).toEqual({
      valid: true,
      errors: [],
      warnings: []
    })
  })

  it("without instructions, describes the server by its tools", () => {
    const m = CatalogSource.deriveMcpManifest("memory", {
      serverInfo: { name: "memory-server" },
      tools: [
        { name: "create_entities", description: "Create multiple new entities in the knowledge graph" },
        { name: "read_graph", description: "Read the entire knowledge graph" }
      ]
    })
    expect(m.title).toBe("Memory")
    expect(m.summary).toBe("Memory: create_entities, read_graph.")
    expect(m.whenToUse).toEqual([
      "Create multiple new entities in the knowledge graph",
      "Read the entire knowledge graph"
    ])
  })

  it("a server named with separators only is titled by the plugin's name", () => {
    const m = CatalogSource.deriveMcpManifest("some-server", { serverInfo: { name: "_" }, tools: [] })
    expect(m.title).toBe("Some")
    expect(validateManifest(m, "some-server").warnings).toEqual([])
  })

  it("any server's facts give a manifest that passes validation with no warning (property)", () => {
    const text = fc.string({ maxLength: 400 })
    fc.assert(
      fc.property(
        fc.record({
          serverInfo: fc.option(
            fc.record({
              name: fc.option(text, { nil: undefined }),
              title: fc.option(text, { nil: undefined })
            }),
            { nil: undefined }
          ),
          instructions: fc.option(text, { nil: undefined }),
          tools: fc.array(
            fc.record({
              name: fc.stringMatching(/^[a-z_]{1,20}$/),
              description: fc.option(text, { nil: undefined })
            }),
            { maxLength: 30 }
          )
        }),
        (f) => {
          const m = CatalogSource.deriveMcpManifest("some-server", f)
          const result = validateManifest(m, "some-server")
          expect(result.errors).toEqual([])
          expect(result.warnings).toEqual([])
        }
      )
    )
  })
})

describe("CatalogSource.deriveSkillManifest", () => {
  it("takes the summary from the description's first sentence and whenToUse from the rest", () => {
    const m = CatalogSource.deriveSkillManifest({
      name: "release-notes",
      description: "Writes release notes from a list of commits. Use when the user asks for a changelog."
    })
    expect(m).toEqual({
      title: "Release Notes",
      summary: "Writes release notes from a list of commits.",
      whenToUse: ["Use when the user asks for a changelog."]
    })
    expect(validateManifest(m, "release-notes").valid).toBe(true)
  })
})

describe("issue 36 item 19: a derived manifest reads as prose", () => {
  const noWarnings = (m: ReturnType<typeof CatalogSource.deriveSkillManifest>, name: string) =>
    expect(validateManifest(m, name).warnings).toEqual([])

  it("the summary never counts tools (a number there matches numbers in requests)", () => {
    const tools = [
      { name: "add", description: "Add two numbers." },
      { name: "power", description: "Raise a number to a power." }
    ]
    const m = CatalogSource.deriveMcpManifest("calc", { serverInfo: { name: "calc-mcp" }, tools })
    expect(m.summary).toBe("Calc: add, power.")
    expect(`${m.summary} ${(m.whenToUse ?? []).join(" ")}`).not.toMatch(/\d/)
    const lone = CatalogSource.deriveMcpManifest("time", {
      serverInfo: { name: "mcp-time" },
      tools: tools.slice(1)
    })
    expect(lone.summary).toBe("Raise a number to a power.")
  })

  it("titles lose package names and take their usual spelling", () => {
    const title = (name: string) =>
      CatalogSource.deriveMcpManifest("x", { serverInfo: { name }, tools: [] }).title
    expect(title("Example Servers/postgres")).toBe("Postgres")
    expect(title("mcp-git")).toBe("Git")
    expect(title("mcp-time")).toBe("Time")
    expect(title("Calc MCP")).toBe("Calc")
    expect(title("pdf")).toBe("PDF")
    expect(title("xlsx")).toBe("XLSX")
    expect(title("github")).toBe("GitHub")
    expect(title("sequential-thinking-server")).toBe("Sequential Thinking")
    expect(
      CatalogSource.deriveSkillManifest({ name: "pdf", description: "Work with PDF files." }).title
    ).toBe("PDF")
  })

  it("an install path in the instructions is dropped, markdown is read as sentences, a long sentence is split, not cut", () => {
    const long =
      "Use this server to query the cluster, to list pods, deployments and services in any namespace, to read their logs, and to scale or restart a deployment when the user asks."
    const m = CatalogSource.deriveMcpManifest("kube", {
      serverInfo: { name: "kubernetes" },
      instructions: [
        "# Kubernetes",
        "Manage a Kubernetes cluster.",
        "Installed at /usr/local/lib/node_modules/mcp-server-kubernetes/dist/index.js, run it with",
        "```",
        "npx mcp-server-kubernetes",
        "```",
        `- ${long}`
      ].join("\n"),
      tools: [{ name: "kubectl_get", description: "Get resources." }]
    })
    expect(m.summary).toBe("Manage a Kubernetes cluster.")
    const all = [m.summary, ...(m.whenToUse ?? [])].join(" ")
    expect(all).not.toContain("/usr/local")
    expect(all).not.toContain("npx")
    expect(all).not.toContain("#")
    expect(all).not.toContain("…")
    // Every word of the long sentence is kept, across entries that each fit.
    expect((m.whenToUse ?? []).join(" ").replace(/[,;]/g, "")).toContain(
      long.replace(/[,;]/g, "").slice(0, -1)
    )
    expect(validateManifest(m, "kube").warnings).toEqual([])
  })

  it("a skill's description is kept whole, and its 'Do NOT trigger' sentence goes to whenNotToUse", () => {
    const description =
      "Use this skill whenever the user wants to do anything with PDF files, including reading or extracting text and tables, merging, splitting, rotating pages, adding watermarks, filling forms, encrypting and OCR on scanned pages. If the user mentions a .pdf file or asks to produce one, use this skill. Do NOT trigger when the user only wants a Word document or a spreadsheet."
    const m = CatalogSource.deriveSkillManifest({ name: "pdf", description })
    expect((m.whenToUse ?? []).join(" ")).not.toMatch(/Do NOT/)
    expect(m.whenNotToUse).toEqual([
      "Do NOT trigger when the user only wants a Word document or a spreadsheet."
    ])
    const kept = [m.summary, ...(m.whenToUse ?? [])].join(" ")
    for (const word of ["watermarks", "encrypting", "OCR", "scanned", ".pdf", "produce"])
      expect(kept).toContain(word)
    expect(kept).not.toContain("…")
    noWarnings(m, "pdf")
  })

  it("an MCP server's 'do not use it for' sentence goes to whenNotToUse", () => {
    const m = CatalogSource.deriveMcpManifest("fetch", {
      serverInfo: { name: "mcp-fetch" },
      instructions:
        "Fetch a URL and return its text. Read web pages the user names. Do not use it for files on disk.",
      tools: [{ name: "fetch", description: "Fetch a URL." }]
    })
    expect(m.whenToUse).toEqual(["Read web pages the user names."])
    expect(m.whenNotToUse).toEqual(["Do not use it for files on disk."])
  })
})

describe("CatalogSource.overrideManifest", () => {
  const derived = CatalogSource.deriveMcpManifest("everything", facts)

  it("every field the operator gives replaces the derived one whole", () => {
    const { manifest, errors, warnings } = CatalogSource.overrideManifest(
      derived,
      { title: "Demo", whenToUse: ["Only this."], visibility: "always", category: "data" },
      "mcpServers.everything.manifest"
    )
    expect(errors).toEqual([])
    expect(warnings).toEqual([])
    expect(manifest).toMatchObject({
      title: "Demo",
      summary: derived.summary,
      whenToUse: ["Only this."],
      visibility: "always",
      category: "data"
    })
  })

  it("a field of the wrong type is an error naming it; an unknown field a warning", () => {
    const r = CatalogSource.overrideManifest(
      derived,
      { title: 3, visibility: "sometimes", tags: ["ok", 1], colour: "red" },
      "mcpServers.x.manifest"
    )
    expect(r.errors).toEqual([
      "mcpServers.x.manifest.title must be a string.",
      "mcpServers.x.manifest.visibility must be one of always, on-demand, silent.",
      "mcpServers.x.manifest.tags must be a list of strings."
    ])
    expect(r.warnings).toHaveLength(1)
    expect(r.warnings[0]).toContain("mcpServers.x.manifest.colour is not a manifest field")
    expect(CatalogSource.overrideManifest(derived, [1], "m").errors).toEqual([
      "m must be an object of manifest fields."
    ])
  })
})

describe("CatalogSource.namespacedToolName", () => {
  it("is a name every provider accepts, deterministic, within 64 characters (property)", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 80 }),
        fc.string({ minLength: 1, maxLength: 200 }),
        (p, t) => {
          const n = CatalogSource.namespacedToolName(p, t)
          expect(n).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
          expect(CatalogSource.namespacedToolName(p, t)).toBe(n)
        }
      )
    )
    expect(CatalogSource.namespacedToolName("github", "create_issue")).toBe("github__create_issue")
  })

  it("two long names that differ only past the cut stay distinct", () => {
    const a = CatalogSource.namespacedToolName("a-very-long-server-name", `${"x".repeat(60)}_one`)
    const b = CatalogSource.namespacedToolName("a-very-long-server-name", `${"x".repeat(60)}_two`)
    expect(a).not.toBe(b)
    expect(a.length).toBe(64)
  })
})

describe("CatalogSource.toPlugins", () => {
  it("keeps a tool's own name unless it collides; colliding derived tools are all namespaced", () => {
    const { plugins, errors, warnings } = CatalogSource.toPlugins(
      [
        mcpSpec("alpha", [sourceTool("echo"), sourceTool("only_alpha"), sourceTool("get.weather")]),
        mcpSpec("beta", [sourceTool("echo"), sourceTool("remember")])
      ],
      { takenToolNames: ["remember"] }
    )
    expect(errors).toEqual([])
    // issue 36 item 19: a name two servers share is told, not only resolved.
    expect(warnings).toEqual([
      "2 plugins ('alpha', 'beta') share the tool name echo: each is offered as <plugin>__<tool> (e.g. alpha__echo)."
    ])
    expect(plugins.map((p) => p.tools?.map((t) => t.name))).toEqual([
      ["alpha__echo", "only_alpha", "alpha__get_weather"],
      ["beta__echo", "beta__remember"]
    ])
  })

  it("namespaces a server's tool named like a meta-tool instead of failing boot", () => {
    const { plugins, errors } = CatalogSource.toPlugins([
      mcpSpec("relay", [sourceTool("call_tool"), sourceTool("load_capability"), sourceTool("ping")])
    ])
    expect(errors).toEqual([])
    expect(plugins[0]!.tools!.map((t) => t.name)).toEqual([
      "relay__call_tool",
      "relay__load_capability",
      "ping"
    ])
    expect(Either.isRight(Catalog.make(plugins))).toBe(true)
  })

  it("builds plugins Catalog.make accepts beside TypeScript plugins, calling tools by their own name", async () => {
    const ts = plugin("memory", { tools: [tool("echo", "A TypeScript echo.")] })
    const derived = CatalogSource.toPlugins([mcpSpec("everything", [sourceTool("echo")])], {
      takenToolNames: ["echo"]
    })
    const catalog = Catalog.unsafeMake([ts, ...derived.plugins])
    const t = catalog.toolsByName.get("everything__echo")!
    expect(t.plugin).toBe("everything")
    expect(t.description).toBe("[Everything] Does echo.")
    expect(t.parameters).toEqual(schema)
    const answer = await t.tool.handler({ text: "hi" }, undefined as never)
    expect(answer).toEqual(ToolOutput.text('echo:{"text":"hi"}'))
    expect(catalog.byName.get("everything")?.source).toEqual({ kind: "mcp", server: "everything" })
  })

  it("applies the tool policy and per-tool visibility, warning about names the source lacks", () => {
    const { plugins, warnings } = CatalogSource.toPlugins([
      mcpSpec("s", [sourceTool("a"), sourceTool("b"), sourceTool("c")], {
        policy: { allow: ["a", "b", "zz"], deny: ["b"], visibility: { a: "always" } }
      })
    ])
    expect(plugins[0]!.tools!.map((t) => [t.name, t.visibility])).toEqual([["a", "always"]])
    expect(warnings).toEqual(["mcpServers.s.tools.allow names 'zz', which the source does not have."])
  })

  it("leaves out a tool whose input schema breaks the client-tool rules, with a warning", () => {
    const bad = { ...sourceTool("bad"), inputSchema: { type: "string" } }
    const checked = {
      ...sourceTool("checked"),
      inputSchema: { type: "object", properties: { a: { type: 7 } } }
    }
    const { plugins, warnings } = CatalogSource.toPlugins([mcpSpec("s", [sourceTool("ok"), bad, checked])], {
      checkSchema: (s) =>
        JSON.stringify(s).includes('"type":7') ? "/properties/a/type must be a string" : undefined
    })
    expect(plugins[0]!.tools!.map((t) => t.name)).toEqual(["ok"])
    expect(warnings).toEqual([
      "mcpServers.s tool 'bad' is left out: the schema's type must be 'object' (the arguments are an object).",
      "mcpServers.s tool 'checked' is left out: /properties/a/type must be a string."
    ])
  })

  it("issue 36 item 13: a manifest derived from the tools (mcpManifest) names only the tools kept by the policy and the schema checks", () => {
    const tools = [sourceTool("search_notes"), sourceTool("delete_everything"), sourceTool("drop_database")]
    const broken = { ...tools[2]!, inputSchema: { type: "string" } }
    const spec: CatalogSource.DerivedPluginSpec = {
      name: "notes",
      source: { kind: "mcp", server: "notes" },
      manifest: CatalogSource.mcpManifest("notes", { serverInfo: { name: "notes" } }),
      tools: [tools[0]!, tools[1]!, broken],
      policy: { deny: ["delete_everything"] }
    }
    const m = CatalogSource.toPlugins([spec]).plugins[0]!.manifest
    expect(m.summary).toBe("Does search_notes.")
    expect(m.whenToUse).toEqual(["Does search_notes."])
    expect(m.tags).toEqual(["notes", "search"])
  })

  it("a malformed override is an error naming the key", () => {
    const { errors } = CatalogSource.toPlugins([
      mcpSpec("s", [sourceTool("a")], { override: { summary: [] } })
    ])
    expect(errors).toEqual(["mcpServers.s.manifest.summary must be a string."])
  })

  it("tools the source gains later are offered per request, after the boot tools, by the same naming rule", async () => {
    let later: ReadonlyArray<CatalogSource.SourceTool> = []
    const { plugins } = CatalogSource.toPlugins(
      [mcpSpec("s", [sourceTool("a")], { laterTools: () => later }), mcpSpec("t", [sourceTool("b")])],
      { takenToolNames: ["host_tool"] }
    )
    const s = plugins[0]!
    const request = { userDid: "did:key:z", sessionId: "x", shared: {} }
    expect(await s.getRequestTools!(request)).toEqual([])
    later = [sourceTool("a"), sourceTool("new_one"), sourceTool("b"), sourceTool("host_tool")]
    expect((await s.getRequestTools!(request)).map((t) => t.name)).toEqual([
      "new_one",
      "s__b",
      "s__host_tool"
    ])
  })
})

describe("unavailable plugins and operating guides", () => {
  const unavailable = CatalogSource.toPlugins([
    {
      name: "dead-server",
      source: { kind: "mcp", server: "dead-server" },
      manifest: CatalogSource.placeholderManifest("dead-server"),
      tools: [],
      unavailable: "could not be started: spawn nope ENOENT."
    },
    {
      name: "release-notes",
      source: { kind: "skill", path: "/skills/release-notes" },
      manifest: CatalogSource.deriveSkillManifest({
        name: "release-notes",
        description: "Writes release notes. Use for changelogs."
      }),
      tools: [],
      operatingGuide: "# Release notes\n\nGroup commits by type."
    }
  ])
  const catalog = Catalog.unsafeMake(unavailable.plugins)

  it("an unavailable plugin is listed with the reason, and load_capability refuses it with the reason", () => {
    const list = Either.getOrThrow(MetaTools.listCapabilities(catalog, [], {}))
    expect(list.plugins.find((p) => p.name === "dead-server")?.unavailable).toBe(
      "could not be started: spawn nope ENOENT."
    )
    expect(list.plugins.find((p) => p.name === "release-notes")?.unavailable).toBeUndefined()
    const load = Either.getOrThrow(MetaTools.loadCapability(catalog, [], { names: ["dead-server"] }))
    expect(load.newlyLoaded).toEqual([])
    expect(load.results[0]).toEqual({
      name: "dead-server",
      status: "error",
      error: "unavailable",
      message:
        "Plugin 'dead-server' is unavailable: could not be started: spawn nope ENOENT. Its tools cannot be used now; tell the user, and do not retry it in this conversation.",
      suggestions: []
    })
  })

  it("load_capability returns the operating guide, and the budget counts it in the plugin's cost", () => {
    const load = Either.getOrThrow(MetaTools.loadCapability(catalog, [], { names: ["release-notes"] }))
    expect(load.results[0]).toMatchObject({
      status: "loaded",
      operatingGuide: "# Release notes\n\nGroup commits by type."
    })
    expect(MetaTools.formatToolMessage(load)).toContain('"operatingGuide":"# Release notes')
    const counter = TokenCounter.heuristic
    const report = TokenBudget.budgetReport(catalog, { basePrompt: "", counter, k: 1 })
    const cost = report.perPlugin.find((p) => p.name === "release-notes")!
    expect(cost.guide).toBe(counter.count("# Release notes\n\nGroup commits by type."))
    expect(cost.cost).toBe(cost.guide)
  })

  it("a non-string guide or reason is a boot error", () => {
    const e = Catalog.make([{ ...plugin("x"), operatingGuide: 3 as never, unavailable: {} as never }])
    expect(Either.isLeft(e) && e.left.errors).toEqual([
      "Plugin 'x' field 'operatingGuide' must be a string.",
      "Plugin 'x' field 'unavailable' must be a string."
    ])
  })
})

describe("a derived catalog costs nothing until loaded", () => {
  it("200 plugins derived from one server under 200 names: the nothing-loaded turn costs what it costs without them", () => {
    const tools = ["echo", "add", "long_running", "sample", "get_image"].map((n) => sourceTool(n))
    const specs = Array.from({ length: 200 }, (_, i) => mcpSpec(`everything-${i}`, tools))
    const derived = CatalogSource.toPlugins(specs)
    const base = [plugin("weather", { tools: [tool("get_weather", "Weather now.")] })]
    const counter = TokenCounter.heuristic
    const without = Catalog.unsafeMake(base)
    const withDerived = Catalog.unsafeMake([...base, ...derived.plugins])
    expect(withDerived.entries).toHaveLength(201)
    const cost = (c: Catalog.Catalog) =>
      TokenBudget.turnCost({ catalog: c, loadedPlugins: [], basePrompt: "Be brief.", counter }).total
    expect(cost(withDerived)).toBe(cost(without))
    expect(Offer.offer(withDerived, LoadedPlugins.empty).map((t) => t.name)).toEqual(
      Offer.offer(without, LoadedPlugins.empty).map((t) => t.name)
    )
    const prompt = (c: Catalog.Catalog) =>
      SystemPrompt.compose({ basePrompt: "Be brief.", catalog: c, loadedPlugins: LoadedPlugins.empty })
    expect(prompt(withDerived)).toBe(prompt(without))
  })
})
