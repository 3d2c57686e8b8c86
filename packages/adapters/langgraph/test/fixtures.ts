/**
 * A small test catalog: the reference weather plugin (deterministic, no network), an `always`
 * plugin, a silent plugin, a plugin whose tool throws, and sub-agents (one whose init fails).
 * Every handler counts its calls so tests can prove a refused tool never ran.
 */
import {
  definePlugin,
  defineTool,
  type Plugin,
  type PluginMiddleware,
  type RuntimeContext
} from "@plugboard/core"
import { Schema } from "effect"
import { weather } from "../../../../examples/plugins/weather.js"

export interface Counters {
  readonly calls: Record<string, number>
  readonly seen: Array<{
    readonly tool: string
    readonly input: unknown
    readonly session: string
    readonly did: string
  }>
}

export const makeCounters = (): Counters => ({ calls: {}, seen: [] })

const count = (c: Counters, tool: string) => {
  c.calls[tool] = (c.calls[tool] ?? 0) + 1
}

/**
 * The reference weather plugin (docs/spec/manifest.md#the-reference-manifest) as the examples ship
 * it (deterministic handlers, no network), with each handler wrapped to count its calls and record
 * the context it received.
 */
export const weatherPlugin = (c: Counters): Plugin => ({
  ...weather,
  tools: (weather.tools ?? []).map((tool) => ({
    ...tool,
    handler: (input: unknown, ctx: RuntimeContext) => {
      count(c, tool.name)
      c.seen.push({ tool: tool.name, input, session: ctx.session.id, did: ctx.user.did })
      return tool.handler(input as never, ctx)
    }
  }))
})

/** An `always` plugin: its tools are offered on every call and it is in the Tier-1 block. */
export const memoryPlugin = (c: Counters) =>
  definePlugin({
    name: "memory",
    manifest: {
      title: "Memory",
      summary: "Durable memory across conversations.",
      whenToUse: ["When the user asks to remember or recall something."],
      visibility: "always",
      category: "memory"
    },
    tools: [
      defineTool({
        name: "recall",
        description: "Recall what is known about a topic.",
        input: Schema.Struct({ topic: Schema.String }),
        handler: (input, ctx) => {
          count(c, "recall")
          return `Nothing stored about ${input.topic} for ${ctx.user.did}; shared=${String(ctx.shared.greeting)}`
        }
      })
    ]
  })

/** A silent plugin: acts through middleware only; its tool must never be offered or run. */
export const creditsPlugin = (c: Counters, middlewares: ReadonlyArray<PluginMiddleware> = []) =>
  definePlugin({
    name: "credits",
    manifest: { title: "Credits", summary: "Charges credits per turn.", whenToUse: [], visibility: "silent" },
    tools: [
      defineTool({
        name: "charge_credits",
        description: "Charge the user.",
        input: Schema.Struct({ amount: Schema.Number }),
        handler: () => {
          count(c, "charge_credits")
          return "charged"
        }
      })
    ],
    middlewares
  })

/** An on-demand plugin whose tool always throws. */
export const flakyPlugin = (c: Counters) =>
  definePlugin({
    name: "flaky",
    manifest: {
      title: "Flaky",
      summary: "A service that is down.",
      whenToUse: ["When testing failures."],
      visibility: "always"
    },
    tools: [
      defineTool({
        name: "explode",
        description: "Always fails.",
        input: Schema.Struct({}),
        handler: () => {
          count(c, "explode")
          throw new Error("upstream is down")
        }
      })
    ]
  })

/** An `always` plugin with two sub-agents: one initialises, one fails to. */
export const helpersPlugin = (c: Counters) =>
  definePlugin({
    name: "helpers",
    manifest: {
      title: "Helpers",
      summary: "Sub-agents for delegated tasks.",
      whenToUse: ["When a task should be delegated."],
      visibility: "always"
    },
    getSubAgents: () => [
      {
        name: "summarizer",
        description: "Summarises a text.",
        init: () => {
          count(c, "summarizer.init")
        },
        run: (task: string) => {
          count(c, "summarizer")
          return `summary of: ${task}`
        }
      },
      {
        name: "translator",
        description: "Translates a text.",
        init: async () => {
          count(c, "translator.init")
          throw new Error("translation service unavailable")
        },
        run: () => {
          count(c, "translator")
          return "never"
        }
      }
    ]
  })

/**
 * The gate a slow tool waits on: the test opens it when it wants the handler to return, and
 * `returned` settles once the handler has (a deferred gate, so no test waits a fixed time).
 */
export interface SlowGate {
  readonly open: () => void
  readonly returned: Promise<void>
  readonly wait: Promise<void>
  readonly markReturned: () => void
}

/** A closed `SlowGate`. */
export const slowGate = (): SlowGate => {
  let open = () => {}
  let markReturned = () => {}
  const wait = new Promise<void>((resolve) => {
    open = resolve
  })
  const returned = new Promise<void>((resolve) => {
    markReturned = resolve
  })
  return { open, returned, wait, markReturned }
}

/**
 * An `always` plugin with a slow tool that ignores its abort signal (it returns, pushing its name
 * to `finished`, only once `gate` is opened) and a quick one: for aborted turns.
 */
export const slowPlugin = (finished: Array<string>, gate: SlowGate) =>
  definePlugin({
    name: "slow",
    manifest: { title: "Slow", summary: "Slow tools.", whenToUse: ["slow work"], visibility: "always" },
    tools: [
      defineTool({
        name: "slow_job",
        description: "Takes a while.",
        input: Schema.Struct({}),
        handler: async () => {
          await gate.wait
          finished.push("slow_job")
          queueMicrotask(gate.markReturned)
          return "slow result"
        }
      }),
      defineTool({
        name: "quick_job",
        description: "Returns at once.",
        input: Schema.Struct({}),
        handler: () => "quick result"
      })
    ]
  })

/** The standard test catalog's plugins. */
export const testPlugins = (c: Counters, extra: ReadonlyArray<Plugin> = []): ReadonlyArray<Plugin> => [
  weatherPlugin(c),
  memoryPlugin(c),
  creditsPlugin(c),
  flakyPlugin(c),
  helpersPlugin(c),
  ...extra
]

/** A logger that keeps every line, for assertions on what was logged. */
export const recordingLogger = () => {
  const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> | undefined }> = []
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    lines.push({ level, message, fields })
  }
  return { lines, logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } }
}
