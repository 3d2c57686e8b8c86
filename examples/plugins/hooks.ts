/**
 * Two plugins that together use most plugin hooks (docs/plugins.md quotes this file):
 * - `team-admin` (silent): loads the team roster once at boot (`getSharedState`), meters model
 *   calls per user (middleware with `beforeModel` / `afterModel` / `onError`), and serves
 *   `GET /team/size` (public) and `GET /team/usage` (behind auth) over HTTP;
 * - `team-directory` (on-demand, `dependsOn` team-admin): a tool reading the shared roster, a
 *   per-request tool that only the roster's members get (`getRequestTools`), a sub-agent with an
 *   `init` (`getSubAgents`), a `prompt` section and a middleware of its own.
 * Deterministic and offline: the roster comes from the factory's `loadRoster`.
 */
import {
  definePlugin,
  defineTool,
  type PluginMiddleware,
  type PluginTool,
  type RequestInfo
} from "@plugboard/core"
import { Schema } from "effect"

/** One person of the roster. */
export interface Member {
  readonly did: string
  readonly name: string
  readonly team: string
  /** The name of the member's manager; absent for a team lead. */
  readonly manager?: string
}

/** The roster the examples and tests use. */
export const ROSTER: ReadonlyArray<Member> = [
  { did: "did:key:z6MkGrace", name: "Grace", team: "platform" },
  { did: "did:key:z6MkAda", name: "Ada", team: "platform", manager: "Grace" },
  { did: "did:key:z6MkLinus", name: "Linus", team: "platform", manager: "Grace" },
  { did: "did:key:z6MkEdsger", name: "Edsger", team: "research" }
]

/** The `context.shared` key team-admin registers; prefixed with its plugin name (one namespace). */
export const ROSTER_KEY = "team-admin.roster"

/** The roster from shared state; a clear error if the host did not read team-admin's state. */
export const rosterOf = (shared: Readonly<Record<string, unknown>>): ReadonlyArray<Member> => {
  const roster = shared[ROSTER_KEY]
  if (!Array.isArray(roster))
    throw new Error(`shared state has no '${ROSTER_KEY}' (is team-admin registered?)`)
  return roster
}

/** What the plugins record, for tests and for anyone curious about when each hook ran. */
export interface TeamUsage {
  /** Model calls per user DID, counted by team-admin's `beforeModel`. */
  readonly modelCalls: Map<string, number>
  /** Output tokens per user DID, as the provider reported them to `afterModel`. */
  readonly outputTokens: Map<string, number>
  /** `<plugin>:<hook>` in the order the middleware hooks ran (the last 100). */
  readonly trace: Array<string>
}

/** Options of `makeTeamPlugins`. */
export interface TeamPluginsOptions {
  /** Where the roster comes from (a database, an HR API); read once, at boot. */
  readonly loadRoster?: () => Promise<ReadonlyArray<Member>>
}

/** Provider errors worth a polite answer instead of a failed turn. */
const isOverloaded = (error: unknown): boolean =>
  error instanceof Error && /\b(429|529)\b|overloaded/i.test(error.message)

/** Answers the org-chart sub-agent gives: who leads or manages the people named in the task. */
const reportingLine = (task: string, roster: ReadonlyArray<Member>): string => {
  const named = roster.filter((m) => new RegExp(`\\b${m.name}\\b`, "i").test(task))
  if (named.length === 0) return "I found nobody from the roster in that question."
  return named
    .map((m) =>
      m.manager === undefined
        ? `${m.name} leads ${m.team}.`
        : `${m.name} (${m.team}) reports to ${m.manager}.`
    )
    .join(" ")
}

/** Builds both plugins around one `TeamUsage`; register them together. */
export const makeTeamPlugins = (options: TeamPluginsOptions = {}) => {
  const usage: TeamUsage = { modelCalls: new Map(), outputTokens: new Map(), trace: [] }
  const loadRoster = options.loadRoster ?? (async () => ROSTER)
  const note = (hook: string): void => {
    if (usage.trace.push(hook) > 100) usage.trace.shift()
  }

  const meter: PluginMiddleware = {
    name: "usage-meter",
    beforeModel: (_call, context) => {
      note("team-admin:beforeModel")
      usage.modelCalls.set(context.user.did, (usage.modelCalls.get(context.user.did) ?? 0) + 1)
    },
    afterModel: (result, context) => {
      note("team-admin:afterModel")
      const tokens = result.usage?.outputTokens ?? 0
      usage.outputTokens.set(context.user.did, (usage.outputTokens.get(context.user.did) ?? 0) + tokens)
    },
    onError: (error, context) => {
      note("team-admin:onError")
      if (!isOverloaded(error)) return undefined // propagate: the turn fails, the client is told
      context.logger.warn("model overloaded; answering politely", { did: context.user.did })
      return { recover: "The assistant is busy right now; please try again in a minute." }
    }
  }

  const teamAdmin = definePlugin({
    name: "team-admin",
    manifest: {
      title: "Team Admin",
      summary: "Loads the team roster and meters model calls per user.",
      visibility: "silent",
      category: "observability",
      tags: ["team", "usage"]
    },
    getSharedState: async () => ({ [ROSTER_KEY]: await loadRoster() }),
    middlewares: [meter],
    routes: [
      {
        method: "GET",
        path: "/team/size",
        public: true,
        handler: (request) => ({ body: { members: rosterOf(request.shared).length } })
      },
      {
        method: "GET",
        path: "/team/usage",
        handler: (request) => {
          const did = request.userDid as string // always set behind the pipeline
          return { body: { did, modelCalls: usage.modelCalls.get(did) ?? 0 } }
        }
      }
    ]
  })

  const findTeammate = defineTool({
    name: "find_teammate",
    description: "Looks a teammate up by name: team and manager.",
    input: Schema.Struct({
      name: Schema.String.annotations({ description: "First name, as the user wrote it." })
    }),
    handler: ({ name }, context) => {
      const member = rosterOf(context.shared).find((m) => m.name.toLowerCase() === name.toLowerCase())
      if (member === undefined) throw new Error(`No teammate named '${name}'.`)
      return { ...member, isYou: member.did === context.user.did }
    }
  })

  /** Only members get `my_team`, built for the caller: the tool list depends on the user. */
  const requestTools = (request: RequestInfo): ReadonlyArray<PluginTool> => {
    const me = rosterOf(request.shared).find((m) => m.did === request.userDid)
    if (me === undefined) return []
    const mates = rosterOf(request.shared).filter((m) => m.team === me.team && m.did !== me.did)
    return [
      defineTool({
        name: "my_team",
        description: "The caller's own team and teammates.",
        input: Schema.Struct({}),
        handler: () => ({ team: me.team, teammates: mates.map((m) => m.name) })
      })
    ]
  }

  const teamDirectory = definePlugin({
    name: "team-directory",
    dependsOn: ["team-admin"],
    manifest: {
      title: "Team Directory",
      summary: "Finds teammates, their teams and who they report to.",
      whenToUse: [
        "The user asks who someone is, which team they are on, or who their manager is.",
        "The user asks about their own team or teammates."
      ],
      whenNotToUse: ["Questions about people outside the company."],
      examples: [
        { user: "Which team is Ada on?", tool: "find_teammate", args: { name: "Ada" } },
        {
          user: "Who does Linus report to?",
          thought: "A reporting line: ask the org chart.",
          tool: "org_chart",
          args: { task: "Who does Linus report to?" }
        }
      ],
      tags: ["team", "people", "org-chart"],
      category: "data"
    },
    prompt: "When you name a teammate, say which team they are on.",
    tools: [findTeammate],
    getRequestTools: requestTools,
    getSubAgents: () => [
      {
        name: "org_chart",
        description: "Answers questions about reporting lines.",
        init: (context) => {
          if (!rosterOf(context.shared).some((m) => m.manager !== undefined))
            throw new Error("the roster has no reporting lines")
        },
        run: (task, context) => {
          context.signal.throwIfAborted()
          return reportingLine(task, rosterOf(context.shared))
        }
      }
    ],
    getMiddlewares: () => [
      {
        name: "directory-trace",
        beforeModel: () => {
          note("team-directory:beforeModel")
        },
        afterModel: (_result, context) => {
          note("team-directory:afterModel")
          // A plugin may write the state fields it owns: remember the user's team in the thread.
          const me = rosterOf(context.shared).find((m) => m.did === context.user.did)
          return me === undefined ? undefined : { userContext: { team: me.team } }
        }
      }
    ]
  })

  return { teamAdmin, teamDirectory, plugins: [teamAdmin, teamDirectory] as const, usage }
}

/** One instance for the CLI: `pnpm plugboard inspect examples/plugins/hooks.ts --eval`, or `serve`. */
export const plugins = makeTeamPlugins().plugins
