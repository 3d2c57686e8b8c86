import { AIMessage, type AIMessageChunk, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { Catalog, CatalogSource, definePlugin, defineTool, ToolOutput } from "@plugboard/core"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { argsFromSchema } from "../src/internal/adaptArgs.js"
import { adaptArgs, decide, route, summariseOutput } from "../src/Router.js"
import { ScriptedChatModel, type ScriptedTurn } from "../src/ScriptedChatModel.js"
import { routerPlugins, weather } from "./fixtures.js"

const catalog = Catalog.unsafeMake(routerPlugins)
const META = ["list_capabilities", "load_capability"]

const turn = (messages: ScriptedTurn["messages"], offeredTools: ReadonlyArray<string>): ScriptedTurn => ({
  messages,
  offeredTools,
  callIndex: 0
})

describe("router on the weather example", () => {
  it("loads weather, then calls get_current_weather {city: Berlin} once offered, then answers", async () => {
    const model = ScriptedChatModel.router({ catalog })
    const user = new HumanMessage("What's the weather in Berlin?")

    // 1st model call: only the meta-tools and the always tier are offered.
    const first = await model.bindTools(toolsNamed([...META, "remember"])).invoke([user])
    expect(first.tool_calls?.map((c) => [c.name, c.args])).toEqual([
      ["load_capability", { names: ["weather"] }]
    ])

    // The runtime loads it: the next call is offered the weather tools.
    const loaded = new ToolMessage({
      tool_call_id: first.tool_calls![0]!.id!,
      name: "load_capability",
      content: "{}"
    })
    const second = await model
      .bindTools(toolsNamed([...META, "remember", "get_current_weather", "get_weather_forecast"]))
      .invoke([user, first, loaded])
    expect(second.tool_calls?.map((c) => [c.name, c.args])).toEqual([
      ["get_current_weather", { city: "Berlin" }]
    ])

    const result = new ToolMessage({
      tool_call_id: second.tool_calls![0]!.id!,
      content: JSON.stringify({ city: "Berlin", temperatureC: 18.5, condition: "clear" })
    })
    const third = await model
      .bindTools(toolsNamed([...META, "remember", "get_current_weather", "get_weather_forecast"]))
      .invoke([user, first, loaded, second, result])
    expect(third.tool_calls ?? []).toEqual([])
    expect(third.text).toBe(
      "Here is what Weather (get_current_weather) returned: city: Berlin, temperatureC: 18.5, condition: clear."
    )
    expect(model.calls.map((c) => c.offeredTools.includes("get_current_weather"))).toEqual([
      false,
      true,
      true
    ])
  })

  it("adapts the city to the message and picks the forecast example when it fits better", () => {
    const offered = [...META, "get_current_weather", "get_weather_forecast"]
    expect(route({ catalog }, turn([new HumanMessage("What's the weather in Paris?")], offered))).toEqual({
      tool: "get_current_weather",
      args: { city: "Paris" }
    })
    expect(
      route({ catalog }, turn([new HumanMessage("Forecast for Lisbon this week please")], offered))
    ).toEqual({
      tool: "get_weather_forecast",
      args: { city: "Lisbon", days: 7 }
    })
  })

  it("calls an always-tier tool directly, without loading", () => {
    expect(
      route(
        { catalog },
        turn([new HumanMessage("Remember that my favourite colour is blue")], [...META, "remember"])
      )
    ).toEqual({ tool: "remember", args: { fact: "blue" } })
  })

  it("acts on a whenToUse phrase, but not on one stray word", () => {
    expect(route({ catalog }, turn([new HumanMessage("Do I need an umbrella today?")], META))).toEqual({
      tool: "load_capability",
      args: { names: ["weather"] }
    })
    expect(route({ catalog }, turn([new HumanMessage("what time is it in a city")], META))).toMatch(
      /no capability/
    )
    expect(route({ catalog, threshold: 100 }, turn([new HumanMessage("weather in Oslo")], META))).toMatch(
      /no capability/
    )
  })

  it("decides on relevance, which does not grow with the catalog: one plugin alone decides the same", () => {
    const alone = Catalog.unsafeMake([weather])
    expect(route({ catalog: alone }, turn([new HumanMessage("Do I need an umbrella today?")], META))).toEqual(
      {
        tool: "load_capability",
        args: { names: ["weather"] }
      }
    )
    expect(route({ catalog: alone }, turn([new HumanMessage("weather in Oslo")], META))).toEqual({
      tool: "load_capability",
      args: { names: ["weather"] }
    })
    expect(route({ catalog: alone }, turn([new HumanMessage("what time is it in a city")], META))).toMatch(
      /no capability/
    )
  })

  it("takes an explicit threshold as the minimum relevance, a share of the best possible score", () => {
    const umbrella = turn([new HumanMessage("Do I need an umbrella today?")], META)
    const oslo = turn([new HumanMessage("weather in Oslo")], META)
    const load = { tool: "load_capability", args: { names: ["weather"] } }
    // Trigger words only in whenToUse reach ~0.2; the plugin's own name ~0.4.
    expect(route({ catalog, threshold: 0.3 }, umbrella)).toMatch(/no capability/)
    expect(route({ catalog, threshold: 0.3 }, oslo)).toEqual(load)
    expect(
      route({ catalog, threshold: 0 }, turn([new HumanMessage("what time is it in a city")], META))
    ).toEqual(load)
    expect(route({ catalog, threshold: 1 }, oslo)).toMatch(/no capability/)
  })

  it("rejects a threshold that is not a finite number >= 0, when the model is made", () => {
    for (const threshold of [Number.NaN, -0.1, Number.POSITIVE_INFINITY, "0.2" as unknown as number]) {
      expect(() => ScriptedChatModel.router({ catalog, threshold })).toThrow(
        /threshold must be a finite number >= 0/
      )
      expect(() => route({ catalog, threshold }, turn([new HumanMessage("weather in Oslo")], META))).toThrow(
        RangeError
      )
    }
  })

  it("answers plainly when nothing is relevant, and greets a greeting", () => {
    const plain = route({ catalog }, turn([new HumanMessage("Explain the rules of chess")], META))
    expect(plain).toMatch(/no capability that fits/)
    expect(route({ catalog }, turn([new HumanMessage("hello!")], META))).toMatch(/^Hello!/)
  })

  it("lists capabilities when asked what it can do, then answers with the listing", () => {
    const ask = new HumanMessage("What can you do?")
    const call = route({ catalog }, turn([ask], META))
    expect(call).toEqual({ tool: "list_capabilities", args: {} })
    const ai = new AIMessage({ content: "", tool_calls: [{ id: "l1", name: "list_capabilities", args: {} }] })
    const listing = new ToolMessage({
      tool_call_id: "l1",
      content: JSON.stringify({
        plugins: [{ name: "weather", summary: "Weather lookups." }, { name: "email" }]
      })
    })
    expect(route({ catalog }, turn([ask, ai, listing], META))).toBe(
      "Here is what I can do:\n- weather: Weather lookups.\n- email"
    )
  })

  it("names at most 10 plugins of a long listing and counts the rest", () => {
    const ask = new HumanMessage("What can you do?")
    const ai = new AIMessage({ content: "", tool_calls: [{ id: "l1", name: "list_capabilities", args: {} }] })
    const plugins = Array.from({ length: 12 }, (_, i) => ({ name: `p${i}`, summary: `s${i}` }))
    const listing = new ToolMessage({ tool_call_id: "l1", content: JSON.stringify({ total: 57, plugins }) })
    const answer = route({ catalog }, turn([ask, ai, listing], META)) as string
    expect(answer.split("\n")).toHaveLength(12)
    expect(answer).toMatch(/- p9: s9\n…and 47 more\.$/)
  })

  it("never loops: a load that did not make the tool available ends with an explanation", () => {
    const user = new HumanMessage("What's the weather in Berlin?")
    const ai = new AIMessage({
      content: "",
      tool_calls: [{ id: "x", name: "load_capability", args: { names: ["weather"] } }]
    })
    const refused = new ToolMessage({ tool_call_id: "x", content: "error", status: "error" })
    expect(route({ catalog }, turn([user, ai, refused], META))).toMatch(/not available to me/)
  })

  it("reports a failed tool as a failure", () => {
    const user = new HumanMessage("What's the weather in Berlin?")
    const ai = new AIMessage({
      content: "",
      tool_calls: [{ id: "w", name: "get_current_weather", args: { city: "Berlin" } }]
    })
    const failed = new ToolMessage({ tool_call_id: "w", content: "upstream timeout", status: "error" })
    expect(route({ catalog }, turn([user, ai, failed], META))).toBe(
      "Weather (get_current_weather) failed: upstream timeout"
    )
  })

  it("streams its final answer in several chunks", async () => {
    const model = ScriptedChatModel.router({ catalog })
    const user = new HumanMessage("What's the weather in Berlin?")
    const ai = new AIMessage({
      content: "",
      tool_calls: [{ id: "w", name: "get_current_weather", args: { city: "Berlin" } }]
    })
    const result = new ToolMessage({
      tool_call_id: "w",
      content: JSON.stringify({ city: "Berlin", temperatureC: 18.5 })
    })
    const chunks: AIMessageChunk[] = []
    for await (const c of await model.stream([user, ai, result])) chunks.push(c)
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.map((c) => c.text).join("")).toBe(
      "Here is what Weather (get_current_weather) returned: city: Berlin, temperatureC: 18.5."
    )
  })
})

describe("router on a derived MCP plugin (no manifest examples)", () => {
  const tools: ReadonlyArray<CatalogSource.SourceTool> = [
    {
      name: "read_file",
      description: "Read the complete contents of a file as text.",
      inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      call: () => ToolOutput.text("")
    },
    {
      name: "create_directory",
      description: "Create a new directory or ensure a directory exists.",
      inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      call: () => ToolOutput.text("")
    }
  ]
  const derived = CatalogSource.toPlugins([
    {
      name: "files",
      source: { kind: "mcp", server: "files" },
      manifest: CatalogSource.mcpManifest("files", { serverInfo: { name: "files", version: "1" } }),
      tools
    }
  ])
  const mcpCatalog = Catalog.unsafeMake(derived.plugins)

  it("issue 36 item 19: calls the tool that fits the message, with arguments from its schema, never the first tool with {}", () => {
    const offered = [...META, ...mcpCatalog.entries[0]!.tools.map((t) => t.name)]
    const move = route(
      { catalog: mcpCatalog },
      turn([new HumanMessage("Create a new directory called reports")], offered)
    )
    expect(move).toMatchObject({ tool: "create_directory", args: { path: expect.any(String) } })
  })
})

describe("the router's reasoning (decide)", () => {
  const WEATHER = [...META, "get_current_weather", "get_weather_forecast"]
  const berlin = new HumanMessage("What's the weather in Berlin?")
  const reasoningOf = (
    messages: ScriptedTurn["messages"],
    offered: ReadonlyArray<string>,
    threshold?: number
  ) =>
    decide(threshold === undefined ? { catalog } : { catalog, threshold }, turn(messages, offered)).reasoning

  it("states each decision: load, call with the adapted arguments, answer from the result", () => {
    expect(reasoningOf([berlin], META)).toBe(
      "The user asks “What's the weather in Berlin?”; the Weather plugin (weather) fits; loading it."
    )
    expect(reasoningOf([new HumanMessage("What's the weather in Paris?")], WEATHER)).toBe(
      'The user asks “What\'s the weather in Paris?”; the Weather plugin (weather) fits; calling get_current_weather with {"city":"Paris"}.'
    )
    const ai = new AIMessage({
      content: "",
      tool_calls: [{ id: "w", name: "get_current_weather", args: { city: "Berlin" } }]
    })
    const ok = new ToolMessage({ tool_call_id: "w", content: "{}" })
    expect(reasoningOf([berlin, ai, ok], WEATHER)).toBe(
      "get_current_weather answered; summarising the result for the user."
    )
    const failed = new ToolMessage({ tool_call_id: "w", content: "timeout", status: "error" })
    expect(reasoningOf([berlin, ai, failed], WEATHER)).toBe(
      "get_current_weather failed; telling the user what came back."
    )
    const two = new AIMessage({
      content: "",
      tool_calls: [
        { id: "a", name: "get_current_weather", args: { city: "Berlin" } },
        { id: "b", name: "get_weather_forecast", args: { city: "Berlin", days: 2 } }
      ]
    })
    const mixed = [
      new ToolMessage({ tool_call_id: "a", content: "{}" }),
      new ToolMessage({ tool_call_id: "b", content: "down", status: "error" })
    ]
    expect(reasoningOf([berlin, two, ...mixed], WEATHER)).toBe(
      "get_current_weather and get_weather_forecast answered, get_weather_forecast with an error; telling the user what came back."
    )
  })

  it("the reply is route's, whatever the reasoning", () => {
    for (const messages of [[berlin], [new HumanMessage("hello")], [new HumanMessage("What can you do?")]]) {
      expect(decide({ catalog }, turn(messages, META)).reply).toEqual(
        route({ catalog }, turn(messages, META))
      )
    }
  })

  it("uses the chosen manifest example's thought when it has one", () => {
    const org = definePlugin({
      name: "org-chart",
      manifest: {
        title: "Org chart",
        summary: "Who reports to whom.",
        whenToUse: ["When the user asks who someone reports to."],
        examples: [
          {
            user: "Who does Dana report to?",
            thought: "A reporting line: ask the org chart.",
            tool: "manager_of",
            args: { person: "Dana" }
          }
        ],
        visibility: "on-demand"
      },
      tools: [
        defineTool({
          name: "manager_of",
          description: "The manager of a person.",
          input: Schema.Struct({ person: Schema.String }),
          handler: () => "Lee"
        })
      ]
    })
    const orgCatalog = Catalog.unsafeMake([org, weather])
    const ask = [new HumanMessage("Who does Sam report to?")]
    expect(decide({ catalog: orgCatalog }, turn(ask, META))).toEqual({
      reply: { tool: "load_capability", args: { names: ["org-chart"] } },
      reasoning:
        "A reporting line: ask the org chart. manager_of belongs to org-chart, which is not loaded yet; loading it."
    })
    expect(decide({ catalog: orgCatalog }, turn(ask, [...META, "manager_of"]))).toEqual({
      reply: { tool: "manager_of", args: { person: "Sam" } },
      reasoning: "A reporting line: ask the org chart."
    })
  })

  it("explains answering without a tool: greeting, listing, no fit (with the relevance), not available", () => {
    expect(reasoningOf([new HumanMessage("hello!")], META)).toBe(
      "The user greets me; no capability is needed to answer."
    )
    expect(reasoningOf([new HumanMessage("What can you do?")], META)).toBe(
      "The user asks what I can do; listing my capabilities with list_capabilities."
    )
    expect(reasoningOf([new HumanMessage("Explain the rules of chess")], META)).toBe(
      "The user asks “Explain the rules of chess”; no capability shares a word with it, so I answer in general terms."
    )
    expect(reasoningOf([new HumanMessage("weather in Oslo")], META, 1)).toMatch(
      /^The user asks “weather in Oslo”; the closest capability, weather, is too weak a match \(relevance 0\.\d\d, below 1\), so I answer in general terms\.$/
    )
    const load = new AIMessage({
      content: "",
      tool_calls: [{ id: "x", name: "load_capability", args: { names: ["weather"] } }]
    })
    const refused = new ToolMessage({ tool_call_id: "x", content: "error", status: "error" })
    expect(reasoningOf([berlin, load, refused], META)).toMatch(
      /fits, but get_current_weather is not offered to me and I cannot load weather here; saying so\.$/
    )
    expect(decide({ catalog }, turn([], META)).reasoning).toMatch(/no user message/)
  })

  it("quotes a long or multi-line message on one clipped line", () => {
    const long = `What's the weather\n\nin Berlin ${"and more ".repeat(30)}`
    const reasoning = reasoningOf([new HumanMessage(long)], META)
    const quoted = /“([^”]*)”/.exec(reasoning)![1]!
    expect(quoted).not.toContain("\n")
    expect(quoted.length).toBeLessThanOrEqual(80)
    expect(quoted.endsWith("…")).toBe(true)
  })

  it("the router model exposes the reasoning as a provider does (additional_kwargs.reasoning_content)", async () => {
    const model = ScriptedChatModel.router({ catalog })
    const first = await model.bindTools(toolsNamed(META)).invoke([berlin])
    expect(first.additional_kwargs.reasoning_content).toBe(reasoningOf([berlin], META))
    expect(first.content).toBe("")
  })
})

describe("router from the offered tools alone (no catalog)", () => {
  const getWeather = {
    name: "get_weather",
    description: "Get the current weather for a city.",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
  const add = {
    name: "add",
    description: "Add two numbers.",
    parameters: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"]
    }
  }
  const metaTools = META.map((name) => ({ name, description: "", parameters: {} }))
  const withTools = (
    messages: ScriptedTurn["messages"],
    tools: NonNullable<ScriptedTurn["tools"]>
  ): ScriptedTurn => ({
    messages,
    offeredTools: tools.map((t) => t.name),
    tools,
    callIndex: 0
  })

  it("calls the offered tool that fits, with arguments from its schema", () => {
    const tools = [getWeather, add]
    expect(route({}, withTools([new HumanMessage("What's the weather in New York?")], tools))).toEqual({
      tool: "get_weather",
      args: { city: "New York" }
    })
    expect(route({}, withTools([new HumanMessage("add 3 and 4")], tools))).toEqual({
      tool: "add",
      args: { a: 3, b: 4 }
    })
    expect(route({}, withTools([new HumanMessage("Explain the rules of chess")], tools))).toMatch(
      /no capability/
    )
    expect(route({}, withTools([new HumanMessage("hello")], tools))).toMatch(/^Hello!/)
  })

  it("discovers with list_capabilities, loads the best listed plugin, then calls it with its manifest example", () => {
    const user = new HumanMessage("Forecast for Lisbon this week please")
    expect(route({}, withTools([user], metaTools))).toEqual({
      tool: "list_capabilities",
      args: { query: "Forecast for Lisbon this week please" }
    })
    const list = new AIMessage({
      content: "",
      tool_calls: [{ id: "l", name: "list_capabilities", args: {} }]
    })
    const listing = new ToolMessage({
      tool_call_id: "l",
      content: JSON.stringify({
        plugins: [
          { name: "email", title: "Email", summary: "Send and search email messages.", tags: [] },
          { name: "weather", title: "Weather", summary: "Weather lookups and forecasts.", tags: ["forecast"] }
        ]
      })
    })
    expect(route({}, withTools([user, list, listing], metaTools))).toEqual({
      tool: "load_capability",
      args: { names: ["weather"] }
    })
    const load = new AIMessage({
      content: "",
      tool_calls: [{ id: "x", name: "load_capability", args: { names: ["weather"] } }]
    })
    const loaded = new ToolMessage({
      tool_call_id: "x",
      content: JSON.stringify({
        newlyLoaded: ["weather"],
        results: [
          {
            name: "weather",
            status: "loaded",
            manifest: weather.manifest,
            tools: [
              { name: "get_current_weather", description: "[Weather] Current conditions for a city." },
              { name: "get_weather_forecast", description: "[Weather] Daily forecast for a city." }
            ]
          }
        ]
      })
    })
    const offered = [
      ...metaTools,
      {
        name: "get_current_weather",
        description: "[Weather] Current conditions for a city.",
        parameters: {}
      },
      { name: "get_weather_forecast", description: "[Weather] Daily forecast for a city.", parameters: {} }
    ]
    // The example `Forecast for Tokyo this week.` adapted: the tool and its `days` come from the manifest.
    expect(route({}, withTools([user, list, listing, load, loaded], offered))).toEqual({
      tool: "get_weather_forecast",
      args: { city: "Lisbon", days: 7 }
    })
  })

  it("never loops: nothing listed fits, or a load that offered nothing, ends with words", () => {
    const user = new HumanMessage("What's the weather in Berlin?")
    const list = new AIMessage({
      content: "",
      tool_calls: [{ id: "l", name: "list_capabilities", args: {} }]
    })
    const empty = new ToolMessage({ tool_call_id: "l", content: JSON.stringify({ total: 0, plugins: [] }) })
    expect(route({}, withTools([user, list, empty], metaTools))).toMatch(/no capability that fits/)
    const listing = new ToolMessage({
      tool_call_id: "l",
      content: JSON.stringify({
        plugins: [{ name: "weather", title: "Weather", summary: "Weather lookups." }]
      })
    })
    const load = new AIMessage({
      content: "",
      tool_calls: [{ id: "x", name: "load_capability", args: { names: ["weather"] } }]
    })
    const refused = new ToolMessage({ tool_call_id: "x", content: "error", status: "error" })
    expect(route({}, withTools([user, list, listing, load, refused], metaTools))).toMatch(
      /weather would answer this, but none of its tools is available/
    )
  })

  it("with a catalog, still calls a tool the catalog does not know when the catalog has no move", () => {
    const tools = [...metaTools, getWeather]
    // `get_weather` is the client's own; the catalog's weather plugin wins while it can be loaded.
    expect(route({ catalog }, withTools([new HumanMessage("What's the weather in Rome?")], tools))).toEqual({
      tool: "load_capability",
      args: { names: ["weather"] }
    })
    expect(
      route({ catalog }, withTools([new HumanMessage("What's the weather in Rome?")], [getWeather]))
    ).toEqual({
      tool: "get_weather",
      args: { city: "Rome" }
    })
  })
})

describe("argsFromSchema", () => {
  it("fills required properties from the message: enums, defaults, numbers, names, free text", () => {
    const schema = {
      type: "object",
      properties: {
        city: { type: "string" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        days: { type: ["integer", "null"] },
        detailed: { type: "boolean" },
        query: { type: "string" },
        lang: { type: "string", default: "en" },
        note: { type: "string" }
      },
      required: ["city", "unit", "days", "detailed", "query", "lang"]
    }
    expect(argsFromSchema(schema, "Forecast in fahrenheit for São Paulo for the next 5 days")).toEqual({
      city: "São Paulo",
      unit: "fahrenheit",
      days: 5,
      detailed: false,
      query: "Forecast in fahrenheit for São Paulo for the next 5 days",
      lang: "en"
    })
    expect(
      argsFromSchema(
        { type: "object", properties: { to: { type: "string" } }, required: ["to"] },
        'Send it to "ops team"'
      )
    ).toEqual({
      to: "ops team"
    })
    expect(argsFromSchema(undefined, "anything")).toEqual({})
  })
})

describe("adaptArgs", () => {
  const example = {
    user: "What's the weather in Berlin?",
    tool: "t",
    args: { city: "Berlin", unit: "C", n: 3 }
  }
  it("replaces a value with the words standing in its place", () => {
    expect(adaptArgs(example, "What's the weather in Paris?")).toEqual({ city: "Paris", unit: "C", n: 3 })
    expect(adaptArgs(example, "how is the weather in New York today?").city).toBe("New York")
    expect(adaptArgs(example, "weather in san francisco").city).toBe("san francisco")
  })
  it("keeps the example's value when the shapes do not align", () => {
    expect(adaptArgs(example, "Is it raining?")).toEqual(example.args)
    expect(
      adaptArgs({ user: "Berlin weather", tool: "t", args: { city: "Berlin" } }, "Madrid weather now").city
    ).toBe("Madrid")
    expect(adaptArgs({ user: "Show me", tool: "t", args: { q: "absent" } }, "Show me cats")).toEqual({
      q: "absent"
    })
  })
})

describe("summariseOutput", () => {
  it("summarises objects by top-level field, arrays by count, text by clipping", () => {
    expect(summariseOutput('{"a":1,"b":[1,2],"c":{"d":1}}')).toBe("a: 1, b: 2 item(s), c: (d: 1)")
    expect(summariseOutput('{"c":{"d":{"e":1}}}')).toBe("c: 1 field(s)")
    expect(summariseOutput("[1,2,3,4]")).toBe("4 result(s): [1,2,3]")
    expect(summariseOutput("plain text")).toBe("plain text")
    expect(summariseOutput("x".repeat(1000)).length).toBe(400)
  })
})

function toolsNamed(names: ReadonlyArray<string>) {
  return names.map((name) => ({ type: "function", function: { name, description: name, parameters: {} } }))
}
