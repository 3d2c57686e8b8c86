/**
 * A plugin's availability to one user when it acts on an account of theirs (docs/oauth.md): a
 * plugin derived from a remote MCP server that signs each user in with OAuth is usable only once
 * the user connected their account. Until then it `needs-connect`, one rule for every door:
 * `list_capabilities` lists it with the reason and the link that starts the connection, and
 * `load_capability` refuses to load it, answering with that link (nothing joins `loadedPlugins`).
 *
 * The host decides, per user and turn, which plugins need a connection (it holds the
 * connections); core only applies the answer. An empty `Pending` changes nothing.
 *
 * A door that can wait for its user (a streamed run on the server, docs/waiting.md) stops the
 * step at such a load instead (`waitOf`): the run waits with a `connect` request, and the host
 * resumes it once the user's connection is made, the load then succeeding.
 */
import type { LoadOutcome } from "./MetaTools.js"

/** Why a plugin is not usable by this user yet, and where they start connecting. */
export interface NeedsConnect {
  /** Why, in a sentence the model can repeat (never a token). */
  readonly reason: string
  /** The link that starts the connection in the user's browser. */
  readonly url: string
  /**
   * The plugin is unavailable for want of a tool list that only a connected user's token can
   * read (an `auth: "oauth"` MCP server nobody has connected yet, docs/oauth.md#the-tool-list):
   * connecting is then what makes it available, so its `unavailable` gives way to this (listed
   * needs-connect with the link, and `load_capability` answers the link). Without it, a plugin
   * unavailable to everyone stays so, whatever the user connects.
   */
  readonly unlisted?: boolean | undefined
}

/**
 * What the user is told about `plugin` (unavailable for `unavailable`, if set): its pending
 * connect, unless it is unavailable for another reason than a list a connect reads
 * (`NeedsConnect.unlisted`).
 */
export const connectFor = (
  pending: Pending,
  plugin: string,
  unavailable: string | undefined
): NeedsConnect | undefined => {
  const needs = pending.get(plugin)
  return needs !== undefined && (unavailable === undefined || needs.unlisted === true) ? needs : undefined
}

/** The plugins this user must connect an account for first, by plugin name. */
export type Pending = ReadonlyMap<string, NeedsConnect>

/** No plugin needs a connection. */
export const NONE: Pending = new Map()

/** What `load_capability` answers for a plugin that needs a connection: the reason and the link. */
export const loadMessage = (plugin: string, needs: NeedsConnect): string =>
  `Plugin '${plugin}' needs the user to connect their account first: ${needs.reason} Give the user this link to connect: ${needs.url} , then load '${plugin}' again.`

/** A step's load that waits for its user to connect: the call that asked it and the request. */
export interface ConnectWait {
  /** The index of the `load_capability` call in the step's batch. */
  readonly call: number
  readonly request: {
    readonly _tag: "connect"
    readonly plugin: string
    readonly url: string
    readonly reason: string
  }
}

/**
 * The first load of a step refused for want of a connection (`needs-connect`), in call order,
 * or undefined. `resumed` names the plugin the turn's wait was about: its load is answered with
 * the link again rather than waiting twice (the user did not connect in time).
 */
export const waitOf = (
  loads: ReadonlyArray<readonly [call: number, outcomes: ReadonlyArray<LoadOutcome>]>,
  pending: Pending,
  resumed?: string | undefined
): ConnectWait | undefined => {
  for (const [call, outcomes] of loads) {
    for (const outcome of outcomes) {
      if (outcome.status !== "error" || outcome.error !== "needs-connect" || outcome.name === resumed)
        continue
      const needs = pending.get(outcome.name)
      if (needs === undefined) continue
      return {
        call,
        request: { _tag: "connect", plugin: outcome.name, url: needs.url, reason: needs.reason }
      }
    }
  }
  return undefined
}
