/**
 * A bounded LRU of accepted tokens, keyed by a SHA-256 of the token text. Holds only what a
 * verification concluded (who, until when) — never the token itself — so a memory dump shows no
 * replayable credential. Entries past their expiry are dropped when looked up.
 */
import { createHash } from "node:crypto"

/** What a verification concluded about one token. */
export interface Verdict {
  readonly did: string
  /** The capabilities the token proves beyond signing in (`UcanVerifierOptions.grantIssuers`). */
  readonly capabilities: ReadonlyArray<{ readonly can: string; readonly with: string }>
  /** Epoch milliseconds after which the token (its whole chain) is no longer valid. */
  readonly expiresAt: number
}

/** The cache key of a token. */
export const keyOf = (token: string): string => createHash("sha256").update(token).digest("base64")

/** Bounded LRU over `Map` insertion order: a hit moves the entry to the back, overflow evicts the front. */
export class VerdictCache {
  private readonly entries = new Map<string, Verdict>()

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`cache capacity must be a non-negative integer, got ${capacity}`)
    }
  }

  /** Number of entries held now. */
  get size(): number {
    return this.entries.size
  }

  /** The entry for `key`, refreshed as most recently used; `undefined` if absent. */
  get(key: string): Verdict | undefined {
    const hit = this.entries.get(key)
    if (hit === undefined) return undefined
    this.entries.delete(key)
    this.entries.set(key, hit)
    return hit
  }

  /** Stores `verdict`, evicting the least recently used entries beyond capacity. */
  set(key: string, verdict: Verdict): void {
    if (this.capacity === 0) return
    this.entries.delete(key)
    this.entries.set(key, verdict)
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next()
      if (oldest.done) break
      this.entries.delete(oldest.value)
    }
  }

  /** Forgets one entry. */
  delete(key: string): void {
    this.entries.delete(key)
  }

  /** Forgets everything. */
  clear(): void {
    this.entries.clear()
  }
}
