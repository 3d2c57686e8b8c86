/**
 * What Matrix sync needs from the per-user SQLite store: where a user's database file lives, the
 * user's storage key (the name used in Matrix), and the user's write lock, so that a snapshot is
 * never taken while a turn of that user is writing.
 */
import { createHash } from "node:crypto"
import { mkdirSync } from "node:fs"
import { join } from "node:path"

/** The per-user database directory, as seen by the sync engine. */
export interface UserDatabases {
  /** Absolute path of the user's SQLite file (it may not exist yet). */
  readonly databasePath: (did: string) => string
  /** A stable, opaque, filesystem- and alias-safe key for the user (a hash of the DID). */
  readonly storageKey: (did: string) => string
  /** Runs `fn` while holding the user's write lock (the one the checkpointer's writes take). */
  readonly withUserWriteLock: <A>(did: string, fn: () => Promise<A>) => Promise<A>
}

/** The storage key of a DID: lowercase hex SHA-256 of its UTF-8 bytes. */
export const hashDid = (did: string): string => createHash("sha256").update(did, "utf8").digest("hex")

/**
 * A per-process write lock per key: a promise chain, so callers run one after another in call
 * order and a failing `fn` never blocks the next one.
 */
export const makeKeyedLock = () => {
  const tails = new Map<string, Promise<unknown>>()
  return <A>(key: string, fn: () => Promise<A>): Promise<A> => {
    const previous = tails.get(key) ?? Promise.resolve()
    const run = previous.then(fn, fn)
    const tail = run.then(
      () => undefined,
      () => undefined
    )
    tails.set(key, tail)
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key)
    })
    return run
  }
}

/**
 * One database file per user in `directory`, named `<sha256(did)>.sqlite`, with an in-process
 * write lock. For hosts and tests that do not use `@plugboard/adapters/sqlite`'s own layout.
 */
export const directoryUserDatabases = (directory: string): UserDatabases => {
  mkdirSync(directory, { recursive: true })
  const lock = makeKeyedLock()
  return {
    databasePath: (did) => join(directory, `${hashDid(did)}.sqlite`),
    storageKey: hashDid,
    withUserWriteLock: (did, fn) => lock(hashDid(did), fn)
  }
}
