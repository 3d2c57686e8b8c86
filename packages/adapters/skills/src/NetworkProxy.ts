/**
 * The host side of a sandbox's network (docs/skills-that-run.md#the-sandbox): an HTTP proxy on a
 * Unix socket in a fresh temporary folder, started for one run whose operator allows some hosts,
 * and closed when the run ends. The sandbox keeps its own network namespace; a forwarder inside
 * it (`FORWARDER`) pipes 127.0.0.1:3128 to this socket, which the sandbox sees through a
 * read-only bind. The proxy tunnels `CONNECT host:port` (HTTPS) and forwards plain HTTP requests
 * of an absolute URI, each only when its host and port match the list; any other gets a 403 that
 * names the host. Names are resolved here, on the host.
 */
import { chmod, chown, mkdtemp, rm } from "node:fs/promises"
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http"
import { connect, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Duplex, Readable, Writable } from "node:stream"
import { type AllowedHost, canonicalHost, isAllowed } from "./AllowHosts.js"

/** Where the proxy's folder is inside the sandbox (read-only). */
export const PROXY_MOUNT = "/run/plugboard-proxy"
/** The socket's name in that folder. */
export const PROXY_SOCKET = "proxy.sock"
/** The port the forwarder listens on inside the sandbox, on 127.0.0.1: `HTTP_PROXY`'s. */
export const PROXY_PORT = 3128

/** Bounds of one run's proxy. */
export interface ProxyLimits {
  /** Connections open at once; more are refused. */
  readonly connections: number
  /** Bytes relayed in both directions over the whole run; past it every connection is closed. */
  readonly bytes: number
}

/** Enough for a script that fetches a few packages or pages; small for a shared host. */
export const DEFAULT_PROXY_LIMITS: ProxyLimits = { connections: 32, bytes: 256 * 1024 * 1024 }

/** A proxy that is running: its folder (bind-mounted into the sandbox) and how to close it. */
export interface NetworkProxy {
  readonly dir: string
  readonly socket: string
  /** Closes the server and every connection, then removes the folder. Never rejects. */
  readonly close: () => Promise<void>
}

/** The hop-by-hop headers a proxy does not forward (RFC 9110 §7.6.1), and the proxy's own. */
const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

const refusal = (target: string): string =>
  `plugboard sandbox proxy: ${target} is not in the allowed list of hosts of this sandbox.\n`

/** A status line and a short text body on a raw socket (a CONNECT's answer). */
const answerRaw = (socket: Duplex, status: string, body: string): void => {
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

const answer = (res: ServerResponse, status: number, body: string): void => {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" })
  res.end(body)
}

/** `host:port` of a CONNECT, canonical, or undefined. */
const connectTarget = (authority: string): { host: string; port: number } | undefined => {
  const m = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority)
  if (m === null) return undefined
  const host = canonicalHost(m[1]!)
  const port = Number(m[2])
  return host === undefined || port < 1 || port > 65535 ? undefined : { host, port }
}

const display = (host: string, port: number): string => `${host.includes(":") ? `[${host}]` : host}:${port}`

/**
 * Starts a proxy allowing `hosts`. `owner` is the sandbox's uid and gid when it runs as a user of
 * its own: the folder stays 0700, and is given to that user so that it alone (and root) can reach
 * the socket.
 */
export const startProxy = async (
  hosts: ReadonlyArray<AllowedHost>,
  owner: { readonly uid: number; readonly gid: number } | undefined,
  limits: ProxyLimits = DEFAULT_PROXY_LIMITS
): Promise<NetworkProxy> => {
  const dir = await mkdtemp(join(tmpdir(), "plugboard-proxy-"))
  const socketPath = join(dir, PROXY_SOCKET)
  const open = new Set<Socket | Duplex>()
  let relayed = 0
  const track = (s: Socket | Duplex) => {
    open.add(s)
    s.on("close", () => open.delete(s))
    s.on("error", () => s.destroy())
  }
  const count = (n: number) => {
    relayed += n
    if (relayed > limits.bytes) for (const s of open) s.destroy()
  }
  const relay = (from: Readable, to: Writable) => {
    from.on("data", (chunk: Buffer) => count(chunk.length))
    from.pipe(to)
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let url: URL
    try {
      url = new URL(req.url ?? "")
    } catch {
      return answer(res, 400, "plugboard sandbox proxy: a request must name an absolute http:// URL.\n")
    }
    if (url.protocol !== "http:")
      return answer(res, 400, "plugboard sandbox proxy: only http:// is forwarded; use CONNECT for https.\n")
    const host = canonicalHost(url.host.replace(/:\d+$/, ""))
    const port = url.port === "" ? 80 : Number(url.port)
    if (host === undefined) return answer(res, 400, "plugboard sandbox proxy: the request names no host.\n")
    if (!isAllowed(hosts, host, port)) return answer(res, 403, refusal(display(host, port)))
    const headers: Record<string, string | string[]> = {}
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k)) headers[k] = v
    const upstream = httpRequest({
      host,
      port,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      agent: false, // a socket of its own, closed with the answer: none outlives the run
      headers: { ...headers, connection: "close" }
    })
    upstream.on("socket", track)
    upstream.on("response", (up) => {
      const back: Record<string, string | string[]> = {}
      for (const [k, v] of Object.entries(up.headers)) if (v !== undefined && !HOP.has(k)) back[k] = v
      res.writeHead(up.statusCode ?? 502, { ...back, connection: "close" })
      relay(up, res)
    })
    upstream.on("error", (error) => {
      if (!res.headersSent)
        answer(res, 502, `plugboard sandbox proxy: ${display(host, port)}: ${error.message}\n`)
      else res.destroy()
    })
    relay(req, upstream)
  })
  server.maxConnections = limits.connections
  server.on("connection", (socket: Socket) => {
    track(socket)
    if (relayed > limits.bytes) socket.destroy()
  })
  server.on("clientError", (_error, socket) => socket.destroy())
  // The CONNECT's socket is the connection's, tracked already.
  server.on("connect", (req: IncomingMessage, client: Duplex, head: Buffer) => {
    const target = connectTarget(req.url ?? "")
    if (target === undefined)
      return answerRaw(client, "400 Bad Request", "plugboard sandbox proxy: CONNECT needs host:port.\n")
    if (!isAllowed(hosts, target.host, target.port))
      return answerRaw(client, "403 Forbidden", refusal(display(target.host, target.port)))
    const upstream = connect(target.port, target.host)
    track(upstream)
    upstream.once("error", (error) => {
      if (client.writable && upstream.bytesRead === 0)
        answerRaw(
          client,
          "502 Bad Gateway",
          `plugboard sandbox proxy: ${display(target.host, target.port)}: ${error.message}\n`
        )
      else client.destroy()
    })
    upstream.once("connect", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
      if (head.length > 0) {
        count(head.length)
        upstream.write(head)
      }
      relay(client, upstream)
      relay(upstream, client)
    })
    client.on("close", () => upstream.destroy())
    upstream.on("close", () => client.destroy())
  })

  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(socketPath, () => {
        server.off("error", reject)
        resolve()
      })
    })
    await chmod(socketPath, 0o600)
    if (owner !== undefined) {
      await chown(socketPath, owner.uid, owner.gid)
      await chown(dir, owner.uid, owner.gid)
    }
  } catch (error) {
    server.close()
    await rm(dir, { recursive: true, force: true })
    throw error
  }

  let closing: Promise<void> | undefined
  const close = () => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const s of open) s.destroy()
      server.closeAllConnections()
      await closed
      await rm(dir, { recursive: true, force: true }).catch(() => {})
    })()
    return closing
  }
  return { dir, socket: socketPath, close }
}

/**
 * The forwarder that runs inside the sandbox under the Node already mounted there:
 * `node -e FORWARDER <port> <socket>` listens on 127.0.0.1:<port>, pipes each connection to the
 * proxy's socket, and writes `ready` on stdout once it listens, which the sandbox's shell waits
 * for before it starts the script.
 */
export const FORWARDER = `
const net = require("node:net");
const [port, socket] = process.argv.slice(1);
const server = net.createServer((c) => {
  const u = net.connect(socket);
  c.on("error", () => u.destroy()); u.on("error", () => c.destroy());
  c.on("close", () => u.destroy()); u.on("close", () => c.destroy());
  c.pipe(u); u.pipe(c);
});
server.on("error", (e) => { console.error("[sandbox] the network forwarder failed: " + e.message); process.exit(1); });
server.listen(Number(port), "127.0.0.1", () => process.stdout.write("ready\\n"));
`

const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`

/**
 * What a sandbox with a network needs, for `bwrapArgs`: the proxy's folder bound read-only at
 * `PROXY_MOUNT`, the proxy variables, and the shell lines that start the forwarder under `node`
 * and wait for its `ready` on a FIFO (no fixed sleep) before the script runs. The forwarder starts
 * after the input tar is read and with fd 4 closed, so it holds neither pipe; it dies with the
 * sandbox (the wrapper's `kill -KILL -1`, or the namespace's kill).
 */
export const sandboxNetwork = (
  proxyDir: string,
  node: string,
  cpuSeconds: number
): {
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly start: ReadonlyArray<string>
} => {
  const proxy = `http://127.0.0.1:${PROXY_PORT}`
  return {
    args: ["--ro-bind", proxyDir, PROXY_MOUNT],
    env: { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy },
    start: [
      "fifo=/tmp/.plugboard-forwarder",
      'mkfifo -m 600 "$fifo" || { echo "[sandbox] the network forwarder could not be started" >&2; exit 125; }',
      `prlimit --cpu=${cpuSeconds} --nofile=256 --core=0 -- ${shellQuote(node)} --max-old-space-size=32 -e ${shellQuote(FORWARDER)} ${PROXY_PORT} ${PROXY_MOUNT}/${PROXY_SOCKET} </dev/null >"$fifo" 4>&- &`,
      'read -r ready <"$fifo"',
      'rm -f "$fifo"',
      '[ "$ready" = ready ] || { echo "[sandbox] the network forwarder did not start" >&2; exit 125; }'
    ]
  }
}
