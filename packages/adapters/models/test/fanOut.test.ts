/**
 * The router on requests about several entities (`internal/fanOut.ts`): the list it reads, one
 * call per entity and model call without code mode, one `run_code` program with it.
 */
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { Catalog, CodeMode } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { entityList, namespaceIn, programFor } from "../src/internal/fanOut.js"
import { decide } from "../src/Router.js"
import type { ScriptedTurn } from "../src/Script.js"
import { routerPlugins } from "./fixtures.js"

const catalog = Catalog.unsafeMake(routerPlugins)
const META = ["list_capabilities", "load_capability"]
const WEATHER_TOOLS = ["get_current_weather", "get_weather_forecast"]

const spec = (name: string) => ({ name, description: name, parameters: {} })
const runCode = CodeMode.definition(
  WEATHER_TOOLS.map((name) => ({
    ref: { namespace: "weather", name },
    tool: {
      name,
      description: `${name}.`,
      parameters: { type: "object" },
      kind: "plugin" as const,
      plugin: "weather"
    }
  }))
)!

const turnOf = (messages: ReadonlyArray<BaseMessage>, names: ReadonlyArray<string>): ScriptedTurn => ({
  messages,
  offeredTools: names,
  tools: names.map((n) => (n === CodeMode.RUN_CODE ? runCode : spec(n))),
  callIndex: 0
})

const call = (id: string, name: string, args: Record<string, unknown>) =>
  new AIMessage({ content: "", tool_calls: [{ id, name, args }] })
const answer = (id: string, name: string, content: string) =>
  new ToolMessage({ tool_call_id: id, name, content })
const replyOf = (turn: ScriptedTurn) => decide({ catalog }, turn).reply

describe("entityList", () => {
  it("reads lists of one-, two- and several-word entities", () => {
    expect(entityList("What's the weather in Berlin, Paris and Rome: which is warmest?")?.items).toEqual([
      "Berlin",
      "Paris",
      "Rome"
    ])
    expect(entityList("Emails of Ana Silva, Ben Okafor and Dev Patel, please")?.items).toEqual([
      "Ana Silva",
      "Ben Okafor",
      "Dev Patel"
    ])
    expect(entityList("Is flight TP1234, LH1169 or BA501 delayed?")?.items).toEqual([
      "TP1234",
      "LH1169",
      "BA501"
    ])
    expect(entityList("Berlin, Paris, and Rome weather")?.items).toEqual(["Berlin", "Paris", "Rome"])
  })

  it("reads no list in a request about one thing, two things or a repeated one", () => {
    expect(entityList("What's the weather in Berlin?")).toBeUndefined()
    expect(entityList("I like apples and pears")).toBeUndefined()
    expect(entityList("Berlin, Berlin and Berlin")).toBeUndefined()
  })

  it("finds exactly the entities of any list it is given (property)", () => {
    const word = fc.stringMatching(/^[A-Z][a-z]{2,8}$/)
    fc.assert(
      fc.property(
        fc.uniqueArray(word, { minLength: 3, maxLength: 10, selector: (w) => w.toLowerCase() }),
        (items) => {
          const text = `Tell me about ${items.slice(0, -1).join(", ")} and ${items.at(-1)}.`
          const list = entityList(text)
          expect(list?.items).toEqual(items)
          expect(text.slice(list!.start, list!.end)).toBe(
            `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`
          )
        }
      )
    )
  })
})

describe("the router on several entities", () => {
  const user = new HumanMessage("What's the weather in Berlin, Paris and Rome?")
  const load = call("l", "load_capability", { names: ["weather"] })
  const loaded = answer("l", "load_capability", "{}")

  it("loads the plugin first, as for one entity", () => {
    expect(replyOf(turnOf([user], [...META]))).toEqual({
      tool: "load_capability",
      args: { names: ["weather"] }
    })
  })

  it("without code mode: one entity per model call, then an answer about every result", () => {
    const offered = [...META, ...WEATHER_TOOLS]
    const history: Array<BaseMessage> = [user, load, loaded]
    const cities: Array<unknown> = []
    for (let i = 0; i < 3; i++) {
      const reply = replyOf(turnOf(history, offered)) as { tool: string; args: { city: string } }
      expect(reply.tool).toBe("get_current_weather")
      cities.push(reply.args.city)
      history.push(
        call(`w${i}`, reply.tool, reply.args),
        answer(`w${i}`, reply.tool, JSON.stringify({ city: reply.args.city, tempC: 20 + i }))
      )
    }
    expect(cities).toEqual(["Berlin", "Paris", "Rome"])
    const final = replyOf(turnOf(history, offered))
    expect(typeof final).toBe("string")
    for (const city of ["Berlin", "Paris", "Rome"]) expect(final).toContain(`city: ${city}`)
  })

  it("with code mode: one program that calls the tool for each entity and returns the answers", () => {
    const reply = replyOf(turnOf([user, load, loaded], [...META, ...WEATHER_TOOLS, CodeMode.RUN_CODE])) as {
      tool: string
      args: { code: string }
    }
    expect(reply.tool).toBe(CodeMode.RUN_CODE)
    expect(reply.args.code).toBe(
      programFor("weather", [
        { item: "Berlin", call: { tool: "get_current_weather", args: { city: "Berlin" } } },
        { item: "Paris", call: { tool: "get_current_weather", args: { city: "Paris" } } },
        { item: "Rome", call: { tool: "get_current_weather", args: { city: "Rome" } } }
      ])
    )
    expect(reply.args.code).toContain("await tools.weather.get_current_weather(input)")
    // Once the program answered, the router answers about its result.
    const ran = call("c", CodeMode.RUN_CODE, reply.args)
    const result = answer("c", CodeMode.RUN_CODE, JSON.stringify({ Berlin: {}, Paris: {}, Rome: {} }))
    const final = replyOf(
      turnOf([user, load, loaded, ran, result], [...META, ...WEATHER_TOOLS, CodeMode.RUN_CODE])
    )
    expect(typeof final).toBe("string")
  })

  it("finds a tool's namespace in run_code's API", () => {
    expect(namespaceIn(runCode.description, "get_weather_forecast")).toBe("weather")
    expect(namespaceIn(runCode.description, "nope")).toBeUndefined()
  })
})
