/**
 * Matrix sync of one user's database holding 1,000 LangGraph checkpoints (50 threads x 20 turns,
 * written by the plugboard SqliteSaver; messages grow each turn like a real conversation):
 *
 * 1. snapshot alone: online backup under the write lock + SHA-256 + gzip, and the sizes;
 * 2. sync with an upload (snapshot + media upload + state event), first (room created) and
 *    after one more checkpoint (room known), median of rounds;
 * 3. sync when nothing changed (snapshot + hash, no network);
 * 4. restore on a fresh host (state event + download + verify + integrity_check + link).
 *
 * Needs the local Synapse (`source scripts/ci-services.sh`); without it, it says so and skips.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  MatrixSyncEngine,
  matrixSnapshotStore,
  registerWithSharedSecret,
  takeSnapshot
} from "@plugboard/matrix"
import { type SqliteSaver, UserDatabaseRegistry } from "@plugboard/sqlite"

const THREADS = 50
const TURNS = 20 // checkpoints per thread: 50 x 20 = 1,000
const ROUNDS = 5

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`
const ms = (millis: number) => `${millis.toFixed(0)} ms`
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN
const time = async <A>(fn: () => Promise<A>): Promise<[A, number]> => {
  const start = performance.now()
  const value = await fn()
  return [value, performance.now() - start]
}

const WORDS = (
  "the a of to and in is it you that for on with as are this be at or have from by not what all " +
  "weather forecast calendar meeting invoice plugin load tool result user agent answer question " +
  "tomorrow rain sunny schedule payment balance report summary project status update please thanks"
).split(" ")

/** Deterministic PRNG (mulberry32): every run writes the same text. */
let seed = 42
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
/** About 60 words of prose-like text (~350 characters), different every message. */
const prose = () => Array.from({ length: 60 }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" ")

/** A message as LangChain serializes it. */
const message = (kind: "HumanMessage" | "AIMessage", thread: number, turn: number) => ({
  lc: 1,
  type: "constructor",
  id: ["langchain_core", "messages", kind],
  kwargs: {
    id: randomUUID(),
    content: `${kind === "HumanMessage" ? "Q" : "A"} ${thread}/${turn}: ${prose()}`,
    additional_kwargs: {},
    response_metadata: {}
  }
})

const writeCheckpoints = async (saver: SqliteSaver): Promise<number> => {
  let count = 0
  for (let t = 0; t < THREADS; t++) {
    const messages: Array<unknown> = []
    let parent: string | undefined
    for (let turn = 0; turn < TURNS; turn++) {
      messages.push(message("HumanMessage", t, turn), message("AIMessage", t, turn))
      const id = `1ef${String(t).padStart(5, "0")}-${String(turn).padStart(4, "0")}-6000-8000-${randomUUID().slice(24)}`
      const versions = { messages: turn + 1, loadedPlugins: Math.floor(turn / 5) + 1 }
      const checkpoint = {
        v: 4,
        id,
        ts: new Date(Date.UTC(2026, 0, 1, 0, t, turn)).toISOString(),
        channel_values: {
          messages: [...messages],
          loadedPlugins: ["weather", "calendar"].slice(0, 1 + (turn % 2))
        },
        channel_versions: versions,
        versions_seen: { agent: versions }
      }
      const config = {
        configurable: {
          thread_id: `thread-${t}`,
          checkpoint_ns: "",
          ...(parent ? { checkpoint_id: parent } : {})
        }
      }
      await saver.put(config, checkpoint as never, { source: "loop", step: turn, parents: {} } as never, {
        messages: versions.messages,
        ...(turn % 5 === 0 ? { loadedPlugins: versions.loadedPlugins } : {})
      })
      parent = id
      count++
    }
  }
  return count
}

export default async (): Promise<void> => {
  const started = performance.now()
  const url = process.env.PLUGBOARD_TEST_SYNAPSE_URL
  const secret = process.env.PLUGBOARD_TEST_SYNAPSE_SECRET
  if (!url || !secret) {
    console.log(
      "skipped: no homeserver (PLUGBOARD_TEST_SYNAPSE_URL/_SECRET unset); run `source scripts/ci-services.sh` first"
    )
    return
  }
  const oracle = await registerWithSharedSecret({
    baseUrl: url,
    sharedSecret: secret,
    username: `bench-${randomUUID().slice(0, 8)}`,
    password: randomUUID()
  })
  const did = `did:key:z6MkBench${randomUUID()}`
  const dirA = mkdtempSync(join(tmpdir(), "plugboard-bench-a-"))
  const dirB = mkdtempSync(join(tmpdir(), "plugboard-bench-b-"))
  try {
    const dbs = new UserDatabaseRegistry({ directory: dirA, retention: false })
    const saver = dbs.checkpointerForUser(did)
    const [count, writeMs] = await time(() => writeCheckpoints(saver))
    console.log(
      `user database: ${count} checkpoints (${THREADS} threads x ${TURNS}), written in ${ms(writeMs)}`
    )

    const snapshots: Array<number> = []
    let sizes = { raw: 0, gz: 0 }
    for (let i = 0; i < ROUNDS; i++) {
      const [snap, took] = await time(() =>
        takeSnapshot({
          workDirectory: dirA,
          withLock: (fn) => dbs.withUserWriteLock(did, fn),
          now: Date.now
        })
      )
      snapshots.push(took)
      sizes = { raw: snap.size, gz: snap.compressed.length }
    }
    console.log(
      `snapshot (backup + sha256 + gzip): median ${ms(median(snapshots))} of ${ROUNDS}; ` +
        `${kib(sizes.raw)} -> ${kib(sizes.gz)} gzip (${((sizes.gz / sizes.raw) * 100).toFixed(1)}%)`
    )

    const engine = new MatrixSyncEngine({ store: matrixSnapshotStore(oracle), databases: dbs, intervalMs: 0 })
    const [first, firstMs] = await time(() => engine.syncNow(did))
    if (first._tag !== "Uploaded") throw new Error(`expected an upload, got ${first._tag}`)
    console.log(`sync with upload, first (creates the room): ${ms(firstMs)}`)

    const uploads: Array<number> = []
    const extra = saver
    for (let i = 0; i < ROUNDS; i++) {
      await extra.put(
        { configurable: { thread_id: `extra-${i}`, checkpoint_ns: "" } },
        {
          v: 4,
          id: `1f000000-0000-6000-8000-${String(i).padStart(12, "0")}`,
          ts: new Date().toISOString(),
          channel_values: { messages: [message("HumanMessage", 999, i)] },
          channel_versions: { messages: 1 },
          versions_seen: {}
        } as never,
        { source: "input", step: -1, parents: {} } as never,
        { messages: 1 }
      )
      const [outcome, took] = await time(() => engine.syncNow(did))
      if (outcome._tag !== "Uploaded") throw new Error(`expected an upload, got ${outcome._tag}`)
      uploads.push(took)
    }
    console.log(
      `sync with upload, one more checkpoint (room known): median ${ms(median(uploads))} of ${ROUNDS}`
    )

    const unchanged: Array<number> = []
    for (let i = 0; i < ROUNDS; i++) {
      const [outcome, took] = await time(() => engine.syncNow(did))
      if (outcome._tag !== "Unchanged") throw new Error(`expected Unchanged, got ${outcome._tag}`)
      unchanged.push(took)
    }
    console.log(
      `sync when unchanged (snapshot + hash, no upload): median ${ms(median(unchanged))} of ${ROUNDS}`
    )
    engine.close()
    await dbs.close()

    const registryB = new UserDatabaseRegistry({ directory: dirB, retention: false })
    const hostB = new MatrixSyncEngine({
      store: matrixSnapshotStore(oracle),
      databases: registryB,
      intervalMs: 0
    })
    const [restored, restoreMs] = await time(() => hostB.restore(did))
    if (restored._tag !== "Restored") throw new Error(`expected a restore, got ${restored._tag}`)
    hostB.close()
    const restoredSize = statSync(registryB.databasePath(did)).size
    await registryB.close()
    console.log(
      `restore on a fresh host (download + verify + integrity_check + link): ${ms(restoreMs)}, ${kib(restoredSize)}`
    )
    console.log(`(whole benchmark: ${ms(performance.now() - started)})`)
  } finally {
    rmSync(dirA, { recursive: true, force: true })
    rmSync(dirB, { recursive: true, force: true })
  }
}
