/**
 * The pool's memory of tool lists, bounded by what the server said of each (2026-07-28
 * `ttlMs`, `cacheScope`; docs/mounting.md#protocol-revisions). A list is served again, without
 * a request, while its `ttlMs` holds, and listed afresh after it; `cacheScope: "public"` lets one
 * list serve every connection to the server (every user), `private` (the default when a server
 * gives a ttl without a scope, as the spec says) only the connection key, hence the user, that
 * listed it. A list without a positive `ttlMs` (every 2025 server, and a 2026-07-28 one that says
 * 0) is not kept: each describe lists again, as before the revision.
 */
import type { ListHints } from "./Connection.js"
import type { McpDescription } from "./Types.js"

/** The longest a server's `ttlMs` is honoured (24 h, the SDK's own bound): no list is pinned forever. */
export const MAX_LIST_TTL_MS = 86_400_000

interface Listing {
  readonly description: McpDescription
  /** The config the list was fetched with: another config's list is not served. */
  readonly fingerprint: string
  readonly expiresAt: number
  /** An expired listing whose relisting was started (`takeExpired`), so it starts once. */
  relisting: boolean
}

const PUBLIC = "\u0000public"

/** Tool lists kept for their `ttlMs`, per server and connection key (or shared when public). */
export class Listings {
  private readonly now: () => number
  private readonly entries = new Map<string, Listing>()

  constructor(now: () => number) {
    this.now = now
  }

  private key(serverName: string, connectionKey: string | undefined): string {
    return `${serverName}\u0000${connectionKey ?? ""}`
  }

  /** A fresh list that may serve this use: its own connection key's, else the server's public one. */
  get(
    serverName: string,
    connectionKey: string | undefined,
    fingerprint: string
  ): McpDescription | undefined {
    const now = this.now()
    for (const key of [this.key(serverName, connectionKey), `${serverName}${PUBLIC}`]) {
      const listing = this.entries.get(key)
      if (listing !== undefined && listing.fingerprint === fingerprint && now < listing.expiresAt) {
        return listing.description
      }
    }
    return undefined
  }

  /** Keeps (or forgets, without a positive ttl) the list a connection just read. */
  put(
    serverName: string,
    connectionKey: string | undefined,
    fingerprint: string,
    description: McpDescription,
    hints: ListHints
  ): void {
    const own = this.key(serverName, connectionKey)
    const shared = `${serverName}${PUBLIC}`
    const ttl = Math.min(hints.ttlMs ?? 0, MAX_LIST_TTL_MS)
    // A newer answer replaces whatever this connection's earlier one left, whatever its scope.
    this.entries.delete(own)
    if (hints.cacheScope === "public") this.entries.delete(shared)
    if (!(ttl > 0)) return
    this.entries.set(hints.cacheScope === "public" ? shared : own, {
      description,
      fingerprint,
      expiresAt: this.now() + ttl,
      relisting: false
    })
  }

  /**
   * True once for a kept list of this use whose ttl ran out: the caller relists it (in the
   * background), and the next true comes only after that answer is kept and expires in turn.
   */
  takeExpired(serverName: string, connectionKey: string | undefined): boolean {
    const now = this.now()
    for (const key of [this.key(serverName, connectionKey), `${serverName}${PUBLIC}`]) {
      const listing = this.entries.get(key)
      if (listing !== undefined && !listing.relisting && now >= listing.expiresAt) {
        listing.relisting = true
        return true
      }
    }
    return false
  }
}
