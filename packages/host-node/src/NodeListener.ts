/**
 * The server's Node side (docs/failure-modes.md): the `http.Server` a request handler is served
 * on, with the bounds a public server needs (a request must arrive whole within
 * `REQUEST_TIMEOUT_MS`, a request Node cannot parse is answered in the wire contract's JSON, not
 * Node's bare 400), and its lifecycle: listen, then close in order, refusing new connections,
 * letting the caller drain its work, and cutting what is left after a second.
 */
import { createServer, type RequestListener, type Server } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { errorBody, STATUS_TEXT } from "./Http.js"

/** What `makeListener` serves, and what it tells the caller. */
export interface ListenerOptions {
  readonly handler: RequestListener
  /** How long a request may take to arrive whole (`REQUEST_TIMEOUT_MS`). */
  readonly requestTimeoutMs: number
  /** Called once listening, with the host it listens on. */
  readonly onListening?: ((host: string) => void) | undefined
}

/** A server that is not listening yet. */
export interface Listener {
  /** Listens on `port` and `host`; the URL a client on this machine reaches it at. */
  readonly listen: (port: number, host: string) => Promise<{ readonly port: number; readonly url: string }>
  readonly url: () => string | undefined
  readonly server: () => Server | undefined
  /**
   * Stops accepting connections, runs `drain` (the caller's work ending), then, a second later,
   * cuts the connections still open (streams that just wrote their end have flushed by then).
   */
  readonly close: (drain: () => Promise<void>) => Promise<void>
}

/** How long the sockets still open after `drain` get to flush before they are cut. */
const FLUSH_MS = 1_000

/** Node's answer to a request it cannot parse is a bare 400; the contract wants JSON. */
const clientErrorHandler =
  (requestTimeoutMs: number) =>
  (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (!socket.writable || error.code === "ECONNRESET") {
      socket.destroy()
      return
    }
    const [status, message] =
      error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "Request headers are too large."]
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? [408, `The request was not received whole within ${requestTimeoutMs} ms (REQUEST_TIMEOUT_MS).`]
          : [400, "Malformed HTTP request."]
    const body = JSON.stringify(errorBody(status, message))
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
    )
  }

/** A listener for `handler` (see the module doc). */
export const makeListener = (options: ListenerOptions): Listener => {
  let server: Server | undefined
  let url: string | undefined
  const sockets = new Set<Socket>()

  const listen = (port: number, host: string) =>
    new Promise<{ port: number; url: string }>((resolve, reject) => {
      if (server !== undefined) {
        reject(new Error("The oracle is already listening."))
        return
      }
      // A request must arrive whole within REQUEST_TIMEOUT_MS (a slow or short body is a 408, not
      // a socket held for Node's default five minutes); Node checks every connection on an
      // interval, a tenth of the bound here, so the answer comes soon after the bound.
      const s = createServer(
        {
          requestTimeout: options.requestTimeoutMs,
          headersTimeout: options.requestTimeoutMs,
          connectionsCheckingInterval: Math.max(
            50,
            Math.min(30_000, Math.floor(options.requestTimeoutMs / 10))
          )
        },
        options.handler
      )
      // Longer than clients' idle keep-alive (undici: 4 s), so a client never reuses a socket the
      // server is closing at that instant ("other side closed") under load.
      s.keepAliveTimeout = 65_000
      s.on("clientError", clientErrorHandler(options.requestTimeoutMs))
      s.on("connection", (socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
      })
      s.once("error", reject)
      s.listen(port, host, () => {
        s.off("error", reject)
        server = s
        options.onListening?.(host)
        const address = s.address() as AddressInfo
        const shown = address.family === "IPv6" ? `[${address.address}]` : address.address
        url = `http://${shown === "0.0.0.0" || shown === "[::]" ? "127.0.0.1" : shown}:${address.port}`
        resolve({ port: address.port, url })
      })
    })

  const close = async (drain: () => Promise<void>) => {
    const stopped = new Promise<void>((resolve) => {
      if (server === undefined) resolve()
      else server.close(() => resolve())
    })
    await drain()
    const timer = setTimeout(() => {
      server?.closeAllConnections()
      for (const s of sockets) s.destroy()
    }, FLUSH_MS)
    await stopped
    clearTimeout(timer)
  }

  return { listen, url: () => url, server: () => server, close }
}
