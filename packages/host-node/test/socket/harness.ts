/** What every Socket.IO test file needs: its server and sockets, closed after each test. */
import { io, type Socket } from "socket.io-client"
import { afterEach } from "vitest"
import { type Running, start } from "../helpers.js"

/** Registers the cleanup; returns `start` (this test's server) and `connect` (a socket to it). */
export const socketHarness = () => {
  let running: Running | undefined
  const sockets: Array<Socket> = []
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.disconnect()
    await running?.stop()
    running = undefined
  })
  return {
    start: async (options: Parameters<typeof start>[0]): Promise<Running> => {
      running = await start(options)
      return running
    },
    /** Resolves on the server's `connected` event; rejects with the `connect_error`. */
    connect: (url: string, auth: Record<string, unknown>, sessionId: string) =>
      new Promise<{ socket: Socket; connected: Record<string, unknown> }>((resolve, reject) => {
        const socket = io(url, { auth, query: { sessionId }, transports: ["websocket"], reconnection: false })
        sockets.push(socket)
        socket.once("connected", (payload: Record<string, unknown>) =>
          resolve({ socket, connected: payload })
        )
        socket.once("connect_error", (error: Error & { data?: unknown }) => {
          socket.disconnect()
          reject(error)
        })
      })
  }
}
