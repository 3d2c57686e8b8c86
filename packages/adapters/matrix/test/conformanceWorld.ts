/**
 * A world for core's MatrixSync conformance suite: each host is a per-user registry
 * (`UserDatabaseRegistry`) in its own temp directory plus a sync engine, over one shared store
 * the suite may cut and restore.
 */
import { existsSync } from "node:fs"
import { UserDatabaseRegistry } from "@plugboard/sqlite"
import type { MatrixSyncConformance } from "@plugboard/testing"
import { Effect } from "effect"
import { MatrixSyncEngine, matrixSyncFromEngine, type SnapshotStore } from "../src/index.js"
import { flakyStore, recordingLogger, tempDir } from "./helpers.js"

/** A conformance world over one shared store, which the suite may cut and restore. */
export const world = (shared: SnapshotStore): MatrixSyncConformance.MatrixSyncWorld => {
  const store = flakyStore(shared)
  return {
    setRemoteAvailable: (available: boolean) =>
      Effect.sync(() => {
        store.down = !available
      }),
    host: () =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const dir = tempDir("matrix-conf")
          const registry = new UserDatabaseRegistry({ directory: dir.path })
          const engine = new MatrixSyncEngine({
            store,
            databases: registry,
            logger: recordingLogger(),
            intervalMs: 0,
            debounceMs: 60_000, // only flush uploads, as the suite expects
            retry: { baseMs: 60_000, maxMs: 60_000 }
          })
          return { dir, registry, engine }
        }),
        ({ dir, registry, engine }) =>
          Effect.promise(async () => {
            engine.close()
            await registry.close()
            dir.cleanup()
          })
      ).pipe(
        Effect.map(({ registry, engine }) => ({
          sync: matrixSyncFromEngine(engine),
          write: (did: string, data: string) =>
            Effect.promise(() =>
              registry.use(did, "write", (db) => {
                db.db.exec(
                  "CREATE TABLE IF NOT EXISTS conformance_state (k TEXT PRIMARY KEY, v TEXT NOT NULL)"
                )
                db.db.prepare("INSERT OR REPLACE INTO conformance_state (k, v) VALUES ('state', ?)").run(data)
              })
            ),
          read: (did: string) =>
            Effect.promise(async () => {
              // Reading must not create the user's database.
              if (!existsSync(registry.databasePath(did))) return undefined
              return registry.use(did, "read", (db) => {
                const table = db.db
                  .prepare("SELECT 1 FROM sqlite_schema WHERE name = 'conformance_state'")
                  .get()
                if (table === undefined) return undefined
                const row = db.db.prepare("SELECT v FROM conformance_state WHERE k = 'state'").get() as
                  | { v: string }
                  | undefined
                return row?.v
              })
            })
        }))
      )
  }
}
