/**
 * An in-memory `SnapshotStore` with the same semantics as the Matrix one (rooms by storage key,
 * media by mxc URI, one pointer per room), for tests and for running without a homeserver.
 */
import { MatrixNotFound, MatrixSyncEngineError } from "./MatrixSyncEngineError.js"
import type { SnapshotPointer } from "./SnapshotPointer.js"
import type { SnapshotStore } from "./SnapshotStore.js"

/** The memory store plus its contents, for assertions. */
export interface MemorySnapshotStore extends SnapshotStore {
  readonly rooms: Map<string, string>
  readonly pointers: Map<string, SnapshotPointer>
  readonly media: Map<string, Uint8Array>
}

/** A fresh, empty in-memory store. */
export const memorySnapshotStore = (): MemorySnapshotStore => {
  const rooms = new Map<string, string>()
  const pointers = new Map<string, SnapshotPointer>()
  const media = new Map<string, Uint8Array>()
  let counter = 0
  return {
    rooms,
    pointers,
    media,
    room: async (storageKey, { create }) => {
      const existing = rooms.get(storageKey)
      if (existing !== undefined) return existing
      if (!create) throw new MatrixNotFound({ message: `no room for ${storageKey}` })
      const roomId = `!room${++counter}:memory`
      rooms.set(storageKey, roomId)
      return roomId
    },
    readPointer: async (roomId, storageKey) => {
      const pointer = pointers.get(`${roomId}/${storageKey}`)
      if (pointer === undefined) throw new MatrixNotFound({ message: `no pointer in ${roomId}` })
      return pointer
    },
    writePointer: async (roomId, storageKey, pointer) => {
      pointers.set(`${roomId}/${storageKey}`, pointer)
    },
    upload: async (bytes) => {
      const mxc = `mxc://memory/${++counter}`
      media.set(mxc, Uint8Array.from(bytes))
      return mxc
    },
    download: async (mxc, options) => {
      const bytes = media.get(mxc)
      if (bytes === undefined) {
        throw new MatrixSyncEngineError({ reason: "corrupt", message: `snapshot media ${mxc} is gone` })
      }
      if (options?.maxBytes !== undefined && bytes.length > options.maxBytes) {
        throw new MatrixSyncEngineError({
          reason: "corrupt",
          message: `snapshot media ${mxc} is longer than the announced ${options.maxBytes} B`
        })
      }
      return Uint8Array.from(bytes)
    }
  }
}
