/**
 * Where snapshots go: one private room per user, owned by the oracle's Matrix account, found by
 * an alias derived from the user's storage key; the compressed snapshot is media, and the
 * `org.plugboard.snapshot` state event (state_key = storage key) points at the current one.
 *
 * `SnapshotStore` is the seam between the sync engine and Matrix; `matrixSnapshotStore` is the
 * matrix-js-sdk implementation. Every failure is a `MatrixNotFound` (a definite "none") or a
 * classified `MatrixSyncEngineError`.
 */
import { Either } from "effect"
import { createClient, type MatrixClient, Preset, Visibility } from "matrix-js-sdk"
import { classify, MatrixNotFound, MatrixSyncEngineError } from "./MatrixSyncEngineError.js"
import { decodePointer, SNAPSHOT_EVENT_TYPE, type SnapshotPointer } from "./SnapshotPointer.js"

/** A user's remote snapshot slot. */
export interface SnapshotStore {
  /** The room for `storageKey`: `MatrixNotFound` when it does not exist (and `create` is false). */
  readonly room: (storageKey: string, options: { readonly create: boolean }) => Promise<string>
  /** The current pointer: `MatrixNotFound` when none; `corrupt` when its content is malformed. */
  readonly readPointer: (roomId: string, storageKey: string) => Promise<SnapshotPointer>
  readonly writePointer: (roomId: string, storageKey: string, pointer: SnapshotPointer) => Promise<void>
  /** Uploads media and returns its `mxc://` URI. */
  readonly upload: (bytes: Uint8Array, fileName: string) => Promise<string>
  /**
   * Downloads media; `corrupt` when the homeserver no longer has it, or when it is longer than
   * `maxBytes` (a pointer's `compressedSize`; unbounded when absent). Reading stops there, so a
   * download never costs more than the pointer announces.
   */
  readonly download: (mxc: string, options?: { readonly maxBytes?: number }) => Promise<Uint8Array>
}

/** Connection settings of the oracle's Matrix account. */
export interface MatrixAccount {
  readonly baseUrl: string
  readonly userId: string
  readonly accessToken: string
  readonly deviceId?: string
}

/** Options of `matrixSnapshotStore`. */
export interface MatrixSnapshotStoreOptions {
  /** Alias localpart prefix; the alias is `#<prefix><storageKey>:<server>`. Default `plugboard-`. */
  readonly aliasPrefix?: string
  /** Per-request timeout. Default 30 s. */
  readonly requestTimeoutMs?: number
  /** Matrix user ids invited to a user's room when it is created (e.g. the user's own account). */
  readonly inviteOnCreate?: (storageKey: string) => ReadonlyArray<string>
}

const quietLogger = {
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  getChild: () => quietLogger
}

/** A `SnapshotStore` on a Matrix homeserver, through matrix-js-sdk (no sync loop is started). */
export const matrixSnapshotStore = (
  account: MatrixAccount,
  options: MatrixSnapshotStoreOptions = {}
): SnapshotStore & { readonly client: MatrixClient } => {
  const timeoutMs = options.requestTimeoutMs ?? 30_000
  const prefix = options.aliasPrefix ?? "plugboard-"
  const server = account.userId.slice(account.userId.indexOf(":") + 1)
  const client = createClient({
    baseUrl: account.baseUrl,
    userId: account.userId,
    accessToken: account.accessToken,
    ...(account.deviceId === undefined ? {} : { deviceId: account.deviceId }),
    // Our own timeout instead of `localTimeoutMs`: the SDK's timer is never cleared nor unref'd,
    // so every request would keep a short-lived process (a CLI, a flush on exit) alive for it.
    fetchFn: (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      const timeout = AbortSignal.timeout(timeoutMs)
      const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout
      return fetch(input, { ...init, signal })
    },
    logger: quietLogger
  })
  const rooms = new Map<string, string>()

  const attempt = async <A>(what: string, fn: () => Promise<A>): Promise<A> => {
    try {
      return await fn()
    } catch (e) {
      throw classify(what, e)
    }
  }

  const resolveAlias = async (alias: string): Promise<string> =>
    (await attempt(`resolve ${alias}`, () => client.getRoomIdForAlias(alias))).room_id

  const room: SnapshotStore["room"] = async (storageKey, { create }) => {
    const cached = rooms.get(storageKey)
    if (cached !== undefined) return cached
    const localpart = `${prefix}${storageKey}`
    const alias = `#${localpart}:${server}`
    let roomId: string
    try {
      roomId = await resolveAlias(alias)
    } catch (e) {
      if (!(e instanceof MatrixNotFound) || !create) throw e
      try {
        roomId = (
          await attempt(`create room ${alias}`, () =>
            client.createRoom({
              room_alias_name: localpart,
              name: `plugboard state ${storageKey.slice(0, 12)}`,
              visibility: Visibility.Private,
              preset: Preset.PrivateChat,
              invite: [...(options.inviteOnCreate?.(storageKey) ?? [])]
            })
          )
        ).room_id
      } catch (createError) {
        // Another host created it between our lookup and our create: use theirs.
        if (createError instanceof MatrixSyncEngineError && createError.reason === "rejected") {
          roomId = await resolveAlias(alias)
        } else {
          throw createError
        }
      }
    }
    rooms.set(storageKey, roomId)
    return roomId
  }

  const readPointer: SnapshotStore["readPointer"] = async (roomId, storageKey) => {
    const content = await attempt(`read ${SNAPSHOT_EVENT_TYPE} in ${roomId}`, () =>
      client.getStateEvent(roomId, SNAPSHOT_EVENT_TYPE, storageKey)
    )
    // An emptied state event (content {}) is how a pointer is deleted in Matrix.
    if (Object.keys(content).length === 0) {
      throw new MatrixNotFound({ message: `${SNAPSHOT_EVENT_TYPE} in ${roomId} is empty` })
    }
    const decoded = decodePointer(content)
    if (Either.isLeft(decoded)) {
      throw new MatrixSyncEngineError({
        reason: "corrupt",
        message: `malformed ${SNAPSHOT_EVENT_TYPE} in ${roomId}: ${decoded.left}`
      })
    }
    return decoded.right
  }

  const writePointer: SnapshotStore["writePointer"] = async (roomId, storageKey, pointer) => {
    await attempt(`write ${SNAPSHOT_EVENT_TYPE} in ${roomId}`, () =>
      // Our event type is not among matrix-js-sdk's typed state events.
      client.sendStateEvent(roomId, SNAPSHOT_EVENT_TYPE as never, pointer as never, storageKey)
    )
  }

  const upload: SnapshotStore["upload"] = async (bytes, fileName) => {
    const response = await attempt("upload snapshot", () =>
      client.uploadContent(bytes as unknown as Blob, {
        type: "application/gzip",
        name: fileName,
        includeFilename: true
      })
    )
    return response.content_uri
  }

  const download: SnapshotStore["download"] = async (mxc, options) => {
    const url = client.mxcUrlToHttp(mxc, undefined, undefined, undefined, false, true, true)
    if (url === null) {
      throw new MatrixSyncEngineError({ reason: "corrupt", message: `not a valid mxc URI: ${mxc}` })
    }
    let response: Response
    try {
      response = await fetch(url, {
        headers: { Authorization: `Bearer ${account.accessToken}` },
        signal: AbortSignal.timeout(timeoutMs)
      })
    } catch (e) {
      throw classify(`download ${mxc}`, e)
    }
    if (response.status === 404) {
      throw new MatrixSyncEngineError({ reason: "corrupt", message: `snapshot media ${mxc} is gone (404)` })
    }
    if (!response.ok) {
      throw classify(`download ${mxc}`, { httpStatus: response.status, message: await response.text() })
    }
    try {
      return await readBody(response, mxc, options?.maxBytes)
    } catch (e) {
      throw classify(`download ${mxc}`, e)
    }
  }

  return { client, room, readPointer, writePointer, upload, download }
}

/**
 * A response body, read as a stream and abandoned as soon as it passes `maxBytes` (so a body
 * longer than announced costs at most `maxBytes` plus one chunk of memory); `corrupt` then.
 */
const readBody = async (
  response: Response,
  mxc: string,
  maxBytes: number | undefined
): Promise<Uint8Array> => {
  if (response.body === null) return new Uint8Array()
  const reader = response.body.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (maxBytes !== undefined && total > maxBytes) {
      await reader.cancel().catch(() => {})
      throw new MatrixSyncEngineError({
        reason: "corrupt",
        message: `snapshot media ${mxc} is longer than the announced ${maxBytes} B (stopped reading at ${total} B)`
      })
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return bytes
}
