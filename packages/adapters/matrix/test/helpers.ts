/**
 * Shared helpers of the Matrix sync tests: temp data dirs, a recording logger, a store wrapper
 * that injects homeserver outages, and access to the local Synapse started by
 * scripts/synapse/synapse.sh (through the env variables scripts/ci-services.sh exports).
 */
import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import Database from "better-sqlite3"
import { afterEach } from "vitest"
import {
  MatrixSyncEngine,
  MatrixSyncEngineError,
  type MatrixSyncEngineOptions,
  type SnapshotStore,
  type SyncLogger,
  type UserDatabaseDirectory,
  userDatabaseDirectory
} from "../src/index.js"

const execFileAsync = promisify(execFile)

/** A temp directory removed by the returned cleanup. */
export const tempDir = (label: string): { readonly path: string; readonly cleanup: () => void } => {
  const path = mkdtempSync(join(tmpdir(), `plugboard-${label}-`))
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) }
}

/** A logger that keeps every line (and prints nothing). */
export const recordingLogger = (): SyncLogger & { readonly lines: Array<string> } => {
  const lines: Array<string> = []
  return {
    lines,
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`)
  }
}

/** Wraps a store so that every call fails as "homeserver unavailable" while `down` is true. */
export const flakyStore = (inner: SnapshotStore): SnapshotStore & { down: boolean; calls: number } => {
  const state = { down: false, calls: 0 }
  const guard =
    <Args extends Array<unknown>, A>(f: (...args: Args) => Promise<A>) =>
    async (...args: Args): Promise<A> => {
      state.calls += 1
      if (state.down) {
        throw new MatrixSyncEngineError({
          reason: "unavailable",
          message: "homeserver unavailable (test outage)"
        })
      }
      return f(...args)
    }
  return Object.assign(state, {
    room: guard(inner.room),
    readPointer: guard(inner.readPointer),
    writePointer: guard(inner.writePointer),
    upload: guard(inner.upload),
    download: guard(inner.download)
  })
}

/** A plain SQLite "user database": a table of rows, WAL mode like the real checkpointer. */
export const writeRows = (path: string, rows: ReadonlyArray<string>): void => {
  const db = new Database(path)
  try {
    db.pragma("journal_mode = WAL")
    db.exec("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    const insert = db.prepare("INSERT INTO rows (value) VALUES (?)")
    db.transaction(() => {
      for (const r of rows) insert.run(r)
    })()
  } finally {
    db.close()
  }
}

/** The rows of a database written by `writeRows`. */
export const readRows = (path: string): Array<string> => {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare("SELECT value FROM rows ORDER BY id").all() as Array<{ value: string }>).map(
      (r) => r.value
    )
  } finally {
    db.close()
  }
}

/** The local homeserver, when scripts/ci-services.sh (or `synapse.sh env`) exported it. */
export interface SynapseEnv {
  readonly url: string
  readonly secret: string
  readonly control: string | undefined
}

export const synapseEnv = (): SynapseEnv | undefined => {
  const url = process.env.PLUGBOARD_TEST_SYNAPSE_URL
  const secret = process.env.PLUGBOARD_TEST_SYNAPSE_SECRET
  if (!url || !secret) return undefined
  return { url, secret, control: process.env.PLUGBOARD_TEST_SYNAPSE_CONTROL || undefined }
}

/** Why the Synapse suite is skipped, shown in the suite's name. */
export const SKIP_REASON =
  "SKIPPED: no homeserver (PLUGBOARD_TEST_SYNAPSE_URL/_SECRET unset); run `source scripts/ci-services.sh` first"

/** Stops or starts the homeserver through scripts/synapse/synapse.sh. */
export const controlSynapse = async (env: SynapseEnv, action: "stop" | "start"): Promise<void> => {
  if (env.control === undefined) throw new Error("PLUGBOARD_TEST_SYNAPSE_CONTROL is not set")
  await execFileAsync(env.control, [action], { timeout: 90_000 })
}

/** A username unique to this run. */
export const uniqueName = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`

/**
 * Registers an `afterEach` that runs the cleanups pushed onto the returned list, last first, and
 * awaits each (registries close asynchronously).
 */
export const cleanupList = (): Array<() => void | Promise<void>> => {
  const cleanups: Array<() => void | Promise<void>> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })
  return cleanups
}

/** An engine with test timings (no tick, 10 ms debounce) and a recording logger; closed by `cleanups`. */
export const testEngine = (
  cleanups: Array<() => void | Promise<void>>,
  store: SnapshotStore,
  databases: UserDatabaseDirectory,
  extra: Partial<MatrixSyncEngineOptions> = {}
) => {
  const logger = recordingLogger()
  const engine = new MatrixSyncEngine({ store, databases, logger, debounceMs: 10, intervalMs: 0, ...extra })
  cleanups.push(() => engine.close())
  return { engine, logger }
}

/**
 * A host's engine on a fresh directory (20 ms debounce, no tick, fast retries) with a recording
 * logger; `wrap` observes the engine's use of the databases (the host's own is `databases`).
 */
export const testHost = (
  cleanups: Array<() => void | Promise<void>>,
  store: SnapshotStore,
  did: string,
  extra: Partial<MatrixSyncEngineOptions> = {},
  wrap: (d: UserDatabaseDirectory) => UserDatabaseDirectory = (d) => d
) => {
  const dir = tempDir("matrix-host")
  const logger = recordingLogger()
  const databases = userDatabaseDirectory(dir.path)
  const engine = new MatrixSyncEngine({
    store,
    databases: wrap(databases),
    logger,
    debounceMs: 20,
    intervalMs: 0,
    retry: { baseMs: 20, maxMs: 100, maxAttempts: 50 },
    ...extra
  })
  cleanups.push(dir.cleanup, () => engine.close())
  return { engine, databases, logger, path: databases.databasePath(did) }
}

/** Polls `check` every 10 ms until it holds (work on real I/O); throws after `ms`. */
export const waitFor = async (check: () => boolean, ms = 5_000): Promise<void> => {
  const until = Date.now() + ms
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time")
    await new Promise((r) => setTimeout(r, 10))
  }
}
