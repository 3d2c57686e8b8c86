/**
 * What a `SqliteSaver` reads of delta channels (LangGraph's `DeltaChannel`, the agent's
 * `messages`) and keeps for the next read: the decoded history per (thread, namespace, channel)
 * and, for paged history, the items undecoded (`DeltaItems.ts`). The saver drops what a write
 * makes stale (`forgetAfter`, `forget`); docs/benchmarks.md (conversation, history pages) has what
 * it saves.
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import type { CheckpointPendingWrite, DeltaChannelHistory } from "@langchain/langgraph-checkpoint"
import type { makeLoader } from "@plugboard/serde"
import type { Database } from "../Database.js"
import { type DeltaItem, type DeltaItemSource, readSources, seedItems, writeItems } from "../DeltaItems.js"
import type { SaverBackend } from "../SqliteSaver.js"
import {
  type CachedHistory,
  type CachedItems,
  deltaKey,
  MAX_CACHED_VALUES,
  rememberIn,
  storedAt
} from "./deltaCache.js"
import { SQL } from "./statements.js"

/** A stored value (a blob, or a write's), as read. */
export interface ValueRow {
  channel: string
  type: string
  value: Uint8Array | null
}

/** A stored write, as read. */
export interface WriteRow extends ValueRow {
  task_id: string
}

/** JSON-path segment for a metadata key (quoted, so dots and spaces are literal). */
export const jsonPathFor = (key: string): string | undefined => (/["\\]/.test(key) ? undefined : `$."${key}"`)

/** The delta histories and items one saver decoded (see the module doc). */
export class DeltaHistory {
  /**
   * The last delta history the saver decoded per (thread, namespace, channel), for the
   * checkpoint it was read at. The next turn's load reads only what was written since that
   * checkpoint (its own writes and its descendants'), so a load decodes what the last turn
   * added, not the whole conversation (docs/benchmarks.md, conversation). Sound because the
   * writes of a checkpoint's ancestors never change: LangGraph adds writes only to the
   * checkpoint a run loaded as the thread's latest, and a write to an older checkpoint drops the
   * thread's entries (`putWrites`), as do deleting, quarantining and pruning it. Another process
   * writing the same file is held to the same rule by LangGraph.
   */
  private readonly histories = new Map<string, CachedHistory>()
  /** The last items `items` read per (thread, namespace, channel); kept and dropped as `histories`. */
  private readonly itemsRead = new Map<string, CachedItems>()

  constructor(
    private readonly backend: SaverBackend,
    private readonly load: ReturnType<typeof makeLoader>,
    /** Whether stored values are the stock serializer's JSON, which `items` reads item by item. */
    private readonly itemsReadable: boolean
  ) {}

  /**
   * The writes a delta channel (LangGraph's `DeltaChannel`, the agent's `messages`) is rebuilt
   * from, and the value they start from, without reading a whole checkpoint per ancestor as the
   * base class does: per channel, one recursive query walks the parent chain up to the nearest
   * ancestor that stores the channel's value (a `DeltaSnapshot`, or a full value written before
   * the channel became a delta channel), one reads the writes of that channel on the way, and
   * one reads the seed. So a load costs what the thread's messages cost to decode, not what
   * its checkpoints cost (docs/benchmarks.md, conversation).
   */
  async history(
    config: RunnableConfig,
    channels: Array<string>
  ): Promise<Record<string, DeltaChannelHistory> | undefined> {
    if (channels.length === 0) return {}
    const threadId = config.configurable?.thread_id
    const result: Record<string, DeltaChannelHistory> = {}
    if (threadId === undefined || threadId === null) {
      for (const ch of channels) result[ch] = { writes: [] }
      return result
    }
    // A channel name no JSON path can spell (quotes, backslashes): the caller walks it the base
    // class's way.
    if (channels.some((ch) => jsonPathFor(ch) === undefined)) return undefined
    const thread = String(threadId)
    const ns: string = config.configurable?.checkpoint_ns ?? ""
    const named: string | undefined = config.configurable?.checkpoint_id
    const raw = await this.backend.read((db) => {
      const id =
        named ||
        (db.statement(SQL.latestId).get(thread, ns) as { checkpoint_id: string } | undefined)?.checkpoint_id
      return channels.map((channel) => {
        if (id === undefined) return { channel, id, writes: [] as Array<WriteRow>, seed: undefined }
        const cached = this.histories.get(deltaKey(thread, ns, channel))
        if (cached?.id === id)
          return { channel, id, writes: [] as Array<WriteRow>, seed: undefined, from: cached }
        const params = { thread, ns, id, channel, path: jsonPathFor(channel)!, stop: cached?.id ?? "" }
        const chain = db.statement(SQL.deltaChain).all(params) as Array<{ id: string; seeded: number }>
        const ids = JSON.stringify(chain.map((c) => c.id))
        const writes = db.statement(SQL.deltaWrites).all({ thread, ns, ids, channel }) as Array<WriteRow>
        const last = chain.at(-1)
        // Walked up to the cached checkpoint (and no stored value on the way): the cached history
        // continues with the writes read here.
        if (cached !== undefined && last?.id === cached.id && last.seeded === 0) {
          return { channel, id, writes, seed: undefined, from: cached }
        }
        const seed =
          last !== undefined && last.seeded === 1
            ? (db.statement(SQL.deltaSeed).get({ ...params, id: last.id }) as ValueRow | undefined)
            : undefined
        return { channel, id, writes, seed }
      })
    })
    for (const { channel, id, writes, seed, from } of raw) {
      const decoded = await Promise.all(
        writes.map(
          async (w): Promise<CheckpointPendingWrite> => [
            w.task_id,
            w.channel,
            await this.load(w.type, w.value ?? "")
          ]
        )
      )
      const history: CachedHistory =
        from !== undefined
          ? {
              id: id!,
              hasSeed: from.hasSeed,
              seed: from.seed,
              writes: decoded.length === 0 ? from.writes : from.writes.concat(decoded)
            }
          : {
              id: id ?? "",
              hasSeed: seed !== undefined,
              seed: seed === undefined ? undefined : await this.load(seed.type, seed.value ?? ""),
              writes: decoded
            }
      if (id !== undefined) this.remember(deltaKey(thread, ns, channel), history)
      const entry: DeltaChannelHistory = { writes: history.writes.slice() }
      if (history.hasSeed) entry.seed = history.seed
      result[channel] = entry
    }
    return result
  }

  /** Keeps `history` as the latest decoded history of its (thread, namespace, channel). */
  private remember(key: string, history: CachedHistory): void {
    rememberIn(this.histories, key, history)
  }

  /** Forgets the cached delta histories of a thread (all namespaces) or of one (thread, namespace). */
  forget(thread: string, ns?: string): void {
    const prefix = ns === undefined ? `${thread}\u0000` : `${thread}\u0000${ns}\u0000`
    for (const cache of [this.histories, this.itemsRead])
      for (const key of [...cache.keys()]) if (key.startsWith(prefix)) cache.delete(key)
  }

  /**
   * The items of delta channel `channel` at the checkpoint `config` names (for the agent's
   * `messages`, one stored message each), undecoded: per item its id, its class and where it is
   * stored (`DeltaItems`), the seed's and then the writes', as `getDeltaChannelHistory` would
   * replay them. Paged history places them with core's reducer and decodes only a page's
   * (`deltaItemValues`), so a page does not decode the thread (docs/benchmarks.md, history pages).
   * Cached per thread like the decoded history: the read after a turn reads only the turn's
   * items. `undefined` when the history holds anything else than LangChain records stored by the
   * stock serializer, or `config` names no checkpoint: the caller reads the whole history then.
   */
  async items(
    config: RunnableConfig,
    channel: string
  ): Promise<
    { readonly seed: ReadonlyArray<DeltaItem>; readonly writes: ReadonlyArray<DeltaItem> } | undefined
  > {
    const key = this.itemKey(config, channel)
    const id: unknown = config.configurable?.checkpoint_id
    if (key === undefined || typeof id !== "string" || id === "") return undefined
    const cacheKey = deltaKey(key.thread, key.ns, channel)
    const cached = this.itemsRead.get(cacheKey)
    if (cached?.id === id) return cached
    // A stored text SQLite's JSON functions cannot read (a damaged row) makes them throw: then the
    // caller reads the whole history, which reports it as any read of the thread does.
    const items = await this.readOrNothing((db): CachedItems | undefined => {
      const own = db.statement(SQL.ownSeed).get({ ...key, id }) as { seeded: number } | undefined
      if (own === undefined) return undefined
      if (own.seeded === 1) {
        const seed = seedItems(db, key, id)
        return seed === undefined ? undefined : { id, seed, writes: [], values: new Map() }
      }
      const chain = db.statement(SQL.deltaChain).all({ ...key, id, stop: cached?.id ?? "" }) as Array<{
        id: string
        seeded: number
      }>
      const written = writeItems(
        db,
        key,
        chain.map((c) => c.id)
      )
      if (written === undefined) return undefined
      const last = chain.at(-1)
      // Walked up to the cached checkpoint (no stored value on the way): its items continue.
      if (cached !== undefined && last?.id === cached.id && last.seeded === 0) {
        return {
          id,
          seed: cached.seed,
          writes: written.length === 0 ? cached.writes : cached.writes.concat(written),
          values: cached.values
        }
      }
      if (last === undefined || last.seeded === 0) return { id, seed: [], writes: written, values: new Map() }
      const seed = seedItems(db, key, last.id)
      return seed === undefined ? undefined : { id, seed, writes: written, values: new Map() }
    })
    if (items !== undefined) rememberIn(this.itemsRead, cacheKey, items)
    return items
  }

  /**
   * The decoded values of the items `sources` names (from `deltaItems` at the same `config`), in
   * that order; `undefined` when one is gone (pruned or deleted since) or cannot be read.
   */
  async itemValues(
    config: RunnableConfig,
    channel: string,
    sources: ReadonlyArray<DeltaItemSource>
  ): Promise<ReadonlyArray<unknown> | undefined> {
    const key = this.itemKey(config, channel)
    if (key === undefined) return undefined
    const values =
      this.itemsRead.get(deltaKey(key.thread, key.ns, channel))?.values ?? new Map<string, unknown>()
    const missing = new Map<string, DeltaItemSource>()
    for (const s of sources) if (!values.has(storedAt(s))) missing.set(storedAt(s), s)
    if (missing.size > 0) {
      const wanted = [...missing.values()]
      const raw = await this.readOrNothing((db) => readSources(db, key, wanted))
      if (raw === undefined) return undefined
      let decoded: Array<unknown>
      try {
        decoded = await Promise.all(raw.map((r) => this.load(r.type, r.value)))
      } catch {
        return undefined
      }
      if (values.size + decoded.length > MAX_CACHED_VALUES) values.clear()
      for (const [i, s] of wanted.entries()) values.set(storedAt(s), decoded[i])
    }
    return sources.map((s) => {
      const value = values.get(storedAt(s))
      return s.at === "write" && s.index !== undefined
        ? Array.isArray(value)
          ? value[s.index]
          : undefined
        : value
    })
  }

  /** `backend.read(fn)`, or `undefined` when it throws. */
  private readOrNothing<T>(fn: (db: Database) => T | undefined): Promise<T | undefined> {
    return this.backend.read(fn).catch(() => undefined)
  }

  /** The thread, namespace and channel `deltaItems` reads, when this saver can read them item by item. */
  private itemKey(config: RunnableConfig, channel: string) {
    const threadId = config.configurable?.thread_id
    const path = jsonPathFor(channel)
    if (!this.itemsReadable || path === undefined) return undefined
    if (threadId === undefined || threadId === null || threadId === "") return undefined
    return { thread: String(threadId), ns: String(config.configurable?.checkpoint_ns ?? ""), channel, path }
  }

  /** Forgets the cached histories of (thread, namespace) kept at a checkpoint after `checkpointId`. */
  forgetAfter(thread: string, ns: string, checkpointId: string): void {
    const prefix = `${thread}\u0000${ns}\u0000`
    for (const cache of [this.histories, this.itemsRead] as Array<Map<string, { readonly id: string }>>)
      for (const [key, cached] of [...cache])
        if (key.startsWith(prefix) && checkpointId < cached.id) cache.delete(key)
  }
}
