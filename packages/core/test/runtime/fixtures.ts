/** Plugin builders shared by the runtime-rule tests (offer, meta-tools, budgets, prompts). */
import { Catalog, type Plugin, type PluginManifest, type PluginTool, type Visibility } from "@plugboard/core"
import { Schema } from "effect"

/** One input schema shared by every generated tool, so JSON Schema is derived once. */
const input = Schema.Struct({ q: Schema.String })

/** A tool; `jsonSchema` `{"type":"object"}` (the smallest object schema) keeps hand-computed budgets small. */
export const tool = (
  name: string,
  description = `Does ${name}.`,
  extra: Partial<PluginTool> = {}
): PluginTool => ({ name, description, input, jsonSchema: { type: "object" }, handler: () => "ok", ...extra })

/** A plugin with a valid manifest; `manifest` overrides any field. */
export const plugin = (
  name: string,
  options: {
    readonly visibility?: Visibility
    readonly tools?: ReadonlyArray<PluginTool>
    readonly manifest?: Partial<PluginManifest>
    readonly prompt?: string
    readonly dependsOn?: ReadonlyArray<string>
  } = {}
): Plugin => ({
  name,
  manifest: {
    title: name.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => `${d ? " " : ""}${c.toUpperCase()}`),
    summary: `The ${name} plugin.`,
    whenToUse: [`When ${name} helps.`],
    ...(options.visibility === undefined ? {} : { visibility: options.visibility }),
    ...options.manifest
  },
  tools: options.tools ?? [],
  ...(options.prompt === undefined ? {} : { prompt: options.prompt }),
  ...(options.dependsOn === undefined ? {} : { dependsOn: options.dependsOn })
})

/** `count` = whitespace-separated words: budgets a reader can check by hand. */
export const wordCounter = {
  name: "words",
  count: (text: string) => text.split(/\s+/).filter((w) => w.length > 0).length
}

/**
 * A small catalog of every tier: `memory` (always, with a prompt), `weather` and `maps`
 * (on-demand), `credits` (silent), `notes` (always, with one on-demand tool), `lab`
 * (experimental, with a per-tool silent tool).
 */
export const smallPlugins = (): ReadonlyArray<Plugin> => [
  plugin("weather", {
    tools: [tool("get_weather", "Current weather."), tool("get_forecast", "Forecast for days.")],
    manifest: {
      title: "Weather",
      summary: "Weather lookups via Open-Meteo.",
      whenToUse: ["Whenever asked about current weather, temperature, rain or wind in a city."],
      examples: [{ user: "What's the weather in Berlin?", tool: "get_weather", args: { city: "Berlin" } }],
      tags: ["weather", "forecast"],
      category: "data",
      stability: "stable"
    }
  }),
  plugin("memory", {
    visibility: "always",
    tools: [tool("remember", "Store a fact.")],
    prompt: "Use memory wisely.",
    manifest: { title: "Memory", summary: "Durable memory.", category: "memory", tags: ["memory"] }
  }),
  plugin("maps", {
    tools: [tool("route", "Plan a route by car.")],
    prompt: "Prefer walking.",
    manifest: {
      title: "Maps",
      summary: "Routes and places.",
      whenToUse: ["Directions between two places."],
      category: "data"
    }
  }),
  plugin("credits", { visibility: "silent", tools: [tool("charge", "Charge credits.")] }),
  plugin("notes", {
    visibility: "always",
    tools: [
      tool("add_note", "Add a note."),
      tool("export_notes", "Export notes.", { visibility: "on-demand" })
    ],
    manifest: { title: "Notes", summary: "Quick notes.", category: "core" }
  }),
  plugin("lab", {
    tools: [
      tool("experiment", "Run an experiment."),
      tool("lab_internal", "Internal.", { visibility: "silent" })
    ],
    manifest: {
      title: "Lab",
      summary: "Experimental features.",
      stability: "experimental",
      category: "automation"
    }
  })
]

/** The small catalog, built. */
export const smallCatalog = () => Catalog.unsafeMake(smallPlugins())
