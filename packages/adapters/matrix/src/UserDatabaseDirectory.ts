/**
 * What Matrix sync needs from the per-user SQLite store: where a user's database file lives, the
 * user's storage key (the name used in Matrix), and the user's write lock, so that a snapshot is
 * never taken while a turn of that user is writing and a restore can replace the file.
 *
 * `UserDatabaseRegistry` from `@plugboard/sqlite` has exactly this shape; use it in a
 * host. `userDatabaseDirectory` is a minimal stand-in for scripts and tests.
 */
import { mkdirSync } from "node:fs"
import { join } from "node:path"
// The same key as the registry's, so hosts using either name a user's room identically.
import { type QuiescentDatabase, storageKey } from "@plugboard/sqlite"
import Database from "better-sqlite3"

// The registry's own type: what its `withUserWriteLock` hands the sync while the user is quiet.
export type { QuiescentDatabase }

/** The per-user database directory, as seen by the sync engine. */
export interface UserDatabaseDirectory {
  /** Absolute path of the user's SQLite file (it may not exist yet). */
  databasePath(did: string): string
  /** A stable, opaque, filesystem- and alias-safe key for the user (a hash of the DID). */
  storageKey(did: string): string
  /** Runs `fn` while no turn or write of the user runs, holding new ones back until it ends. */
  withUserWriteLock<A>(did: string, fn: (db: QuiescentDatabase) => Promise<A>): Promise<A>
  /**
   * True while a turn or a write of the user runs. Optional: when given, a background sync of a
   * busy user is put off (a while) rather than wait for the turn while holding a sync slot.
   */
  isBusy?(did: string): boolean
}

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
 * One database file per user in `directory`, named `<storageKey>.sqlite`, with an in-process
 * write lock that only callers of `withUserWriteLock` take. It keeps no connection, so
 * `closeConnection` does nothing: whoever writes the files must not hold them open across a
 * restore. For scripts and tests; hosts use `UserDatabaseRegistry`.
 */
export const userDatabaseDirectory = (directory: string): UserDatabaseDirectory => {
  mkdirSync(directory, { recursive: true })
  const lock = makeKeyedLock()
  const databasePath = (did: string) => join(directory, `${storageKey(did)}.sqlite`)
  return {
    databasePath,
    storageKey: storageKey,
    withUserWriteLock: (did, fn) =>
      lock(storageKey(did), () =>
        fn({
          path: databasePath(did),
          backup: async (destination) => {
            const db = new Database(databasePath(did), { fileMustExist: true })
            try {
              await db.backup(destination)
            } finally {
              db.close()
            }
          },
          closeConnection: () => {}
        })
      )
  }
}
