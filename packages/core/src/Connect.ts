/**
 * A plugin's availability to one user when it acts on an account of theirs (docs/oauth.md): a
 * plugin derived from a remote MCP server that signs each user in with OAuth is usable only once
 * the user connected their account. Until then it `needs-connect`, one rule for every door:
 * `list_capabilities` lists it with the reason and the link that starts the connection, and
 * `load_capability` refuses to load it, answering with that link (nothing joins `loadedPlugins`).
 *
 * The host decides, per user and turn, which plugins need a connection (it holds the
 * connections); core only applies the answer. An empty `Pending` changes nothing.
 */

/** Why a plugin is not usable by this user yet, and where they start connecting. */
export interface NeedsConnect {
  /** Why, in a sentence the model can repeat (never a token). */
  readonly reason: string
  /** The link that starts the connection in the user's browser. */
  readonly url: string
}

/** The plugins this user must connect an account for first, by plugin name. */
export type Pending = ReadonlyMap<string, NeedsConnect>

/** No plugin needs a connection. */
export const NONE: Pending = new Map()

/** What `load_capability` answers for a plugin that needs a connection: the reason and the link. */
export const loadMessage = (plugin: string, needs: NeedsConnect): string =>
  `Plugin '${plugin}' needs the user to connect their account first: ${needs.reason} Give the user this link to connect: ${needs.url} , then load '${plugin}' again.`
