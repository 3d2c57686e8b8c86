/**
 * What carries a gateway session's `loadedPlugins` (docs/mcp-gateway.md#threads): the session
 * itself, held in memory for as long as it lives (a stdio process, an HTTP `Mcp-Session-Id`); a
 * thread named by a key, kept in a `LoadedPluginsStore` so that every connection naming it, from
 * any process, sees its loads; or nothing, for a request that opened no session and named no
 * thread, which starts empty and forgets its loads with its answer.
 */
import { randomUUID } from "node:crypto"
import { LoadedPlugins, type LoadedPluginsStore } from "@plugboard/core"
import { Cause, Effect, Exit } from "effect"

/** Where a session's loads live. */
export interface Thread {
  /** `session`: in memory; `kept`: in the store under `key`; `none`: this request only. */
  readonly kind: "session" | "kept" | "none"
  /** The thread key, for a kept thread. */
  readonly key?: string | undefined
  /**
   * Who else is on this thread, for telling them of a load: `kept:<key>` for a kept thread (every
   * connection naming the key), a fresh id for a thread held in memory.
   */
  readonly id: string
  /** The thread's loaded plugins now (a kept thread's, others' loads included). */
  readonly read: () => Promise<LoadedPlugins.LoadedPlugins>
  /** Adds names (the union); resolves with the set after. Rejects with the store's error. */
  readonly add: (names: ReadonlyArray<string>) => Promise<LoadedPlugins.LoadedPlugins>
}

/** Runs a store operation; rejects with the store's own error (not a wrapper). */
const run = async <A>(effect: Effect.Effect<A, LoadedPluginsStore.LoadedPluginsStoreError>): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return exit.value
  throw Cause.squash(exit.cause)
}

/** A thread held by the session, in memory. */
export const sessionThread = (): Thread => {
  let loaded = LoadedPlugins.empty
  return {
    kind: "session",
    id: `session:${randomUUID()}`,
    read: async () => loaded,
    add: async (names) => {
      loaded = LoadedPlugins.add(loaded, names)
      return loaded
    }
  }
}

/** The `id` of the kept thread `key`. */
export const keptId = (key: string): string => `kept:${key}`

/** A thread kept in `store` under `key` (checked by the store: an invalid key rejects). */
export const keptThread = (store: LoadedPluginsStore.LoadedPluginsStoreService, key: string): Thread => {
  // Reads of an unchanged thread return equal arrays; keeping the last one lets the session's
  // cache of the offer compare by identity.
  let last = LoadedPlugins.empty
  const settle = (read: LoadedPlugins.LoadedPlugins): LoadedPlugins.LoadedPlugins => {
    if (read.length === last.length && read.every((n, i) => n === last[i])) return last
    last = read
    return read
  }
  return {
    kind: "kept",
    key,
    id: keptId(key),
    // The boundary between the gateway's plain async code and the store's Effect API.
    read: () => run(Effect.map(store.get(key), settle)),
    add: (names) => run(Effect.map(store.add(key, names), settle))
  }
}

/** A request's own thread, empty, forgotten with the request. */
export const noThread = (): Thread => {
  const thread = sessionThread()
  return { ...thread, kind: "none" }
}
