/**
 * The network between the SDK and the server, as a test needs to break it: a `fetch` in front of
 * the real one (the SDK calls the global `fetch` for every request) that records every exchange,
 * can cut a response's body after a chosen byte, as a dropped connection does, can keep a request
 * from the server until the test lets it go, as a network that is down for a while does, and can
 * take a whole "page" off the network, as a reload does to the page it replaces.
 *
 * A page is a `baseUrl` with a path prefix (`<server>/~<name>`): the SDK builds every URL by
 * concatenation, so each request names its page; the prefix is removed before the request goes
 * on. Socket.IO (`wsUrl`) is not routed through here.
 *
 * Import from a test file that starts with `// @vitest-environment jsdom`, and call `network()`
 * at its top level.
 */
import { afterEach, beforeEach } from "vitest"

/** One request the SDK made: its page, method, path (without the page's prefix) and status. */
export interface Exchange {
  readonly page: string
  readonly method: string
  readonly path: string
  /** The response's status; 0 when the request never reached the server (a page taken away). */
  readonly status: number
  /** The body, when it is JSON. */
  readonly body?: unknown
  /** Response headers the tests read. */
  readonly runId?: string | null
  readonly requestId?: string | null
}

/** Where to cut a body: a byte offset into the bytes received so far, or undefined (not yet). */
export type CutAt = (received: Buffer) => number | undefined

/** A one-off cut of the next response matching `method` and `path`. */
export interface Cut {
  readonly method: string
  readonly path: RegExp
  readonly at: CutAt
}

/** A one-off hold of the next request matching `method` and `path` (see `hold`). */
interface Hold {
  readonly method: string
  readonly path: RegExp
  readonly arrived: () => void
  readonly goOn: Promise<void>
}

/** A request kept from the server: `arrived` once the SDK sent it, `letGo()` sends it on. */
export interface Held {
  readonly arrived: Promise<void>
  readonly letGo: () => void
}

/** The error a dropped connection gives a body's reader (undici's). */
const dropped = () => new TypeError("terminated")

/** What a request of a page that is gone gives the SDK: an abort, which it does not retry. */
const gone = () => Object.assign(new Error("the page is gone"), { name: "AbortError" })

/**
 * The byte range `[start, end)` of the `nth` (1-based) complete SSE frame whose event is `event`
 * in `bytes` (end just after its blank line), or undefined.
 */
export const frameRange = (
  bytes: Buffer,
  event: string,
  nth: number
): { readonly start: number; readonly end: number } | undefined => {
  const named = new RegExp(`^event: ${event}$`, "m")
  let from = 0
  let seen = 0
  for (;;) {
    const end = bytes.indexOf("\n\n", from)
    if (end < 0) return undefined
    if (named.test(bytes.subarray(from, end).toString("utf8"))) {
      seen += 1
      if (seen === nth) return { start: from, end: end + 2 }
    }
    from = end + 2
  }
}

/** A cut just after the `nth` frame named `event` (a connection that drops between two frames). */
export const afterFrame =
  (event: string, nth: number): CutAt =>
  (bytes) =>
    frameRange(bytes, event, nth)?.end

/**
 * A cut `into` bytes into the data of the `nth` frame named `event`, once that much of it came (a
 * connection that drops in the middle of a frame). It is found as soon as its byte arrives, so it
 * is never behind what was already let through.
 */
export const insideFrame =
  (event: string, nth: number, into: number): CutAt =>
  (bytes) => {
    const head = new RegExp(`^(?:id: \\d+\\n)?event: ${event}\\ndata: `)
    let from = 0
    let seen = 0
    while (from < bytes.length) {
      const match = head.exec(bytes.subarray(from, from + 64).toString("utf8"))
      if (match !== null) {
        seen += 1
        if (seen === nth) {
          const offset = from + Buffer.byteLength(match[0]) + into
          return offset <= bytes.length ? offset : undefined
        }
      }
      const end = bytes.indexOf("\n\n", from)
      if (end < 0) return undefined
      from = end + 2
    }
    return undefined
  }

/**
 * Installs the network for each test of the file; `origin()` is the server's URL. Returns the
 * exchanges of the running test and the controls.
 */
export const network = (origin: () => string | undefined) => {
  const exchanges: Array<Exchange> = []
  const cuts: Array<Cut> = []
  const holds: Array<Hold> = []
  /** Every hold's `letGo`: a test that ends lets its held requests go. */
  const letGos: Array<() => void> = []
  const goneFor = new Set<string>()
  /** Bodies still open, by page: what taking a page away drops. */
  const open = new Map<string, Set<() => void>>()
  let original: typeof fetch | undefined

  /** The body of `response`, cut where `at` says (then ends as a dropped connection does). */
  const wrap = (page: string, response: Response, at: CutAt | undefined): Response => {
    if (response.body === null) return response
    const reader = response.body.getReader()
    let received = Buffer.alloc(0)
    let cut = false
    let killed = false
    const kill = () => {
      killed = true
      void reader.cancel().catch(() => undefined)
    }
    const bodies = open.get(page) ?? new Set()
    open.set(page, bodies)
    bodies.add(kill)
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // After the cut's last bytes were read: the connection drops.
        if (cut || killed) {
          bodies.delete(kill)
          controller.error(dropped())
          return
        }
        let read: Awaited<ReturnType<typeof reader.read>>
        try {
          read = await reader.read()
        } catch (error) {
          bodies.delete(kill)
          controller.error(error)
          return
        }
        if (killed) {
          bodies.delete(kill)
          controller.error(dropped())
          return
        }
        if (read.done) {
          bodies.delete(kill)
          controller.close()
          return
        }
        const before = received.length
        received = Buffer.concat([received, read.value])
        const offset = at?.(received)
        if (offset === undefined) {
          controller.enqueue(read.value)
          return
        }
        // Keep what came before the cut; the server's side of the connection goes away too.
        cut = true
        void reader.cancel().catch(() => undefined)
        if (offset > before) controller.enqueue(read.value.subarray(0, offset - before))
        else {
          bodies.delete(kill)
          controller.error(dropped())
        }
      },
      cancel(reason) {
        bodies.delete(kill)
        return reader.cancel(reason)
      }
    })
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers
    })
  }

  beforeEach(() => {
    exchanges.length = 0
    cuts.length = 0
    holds.length = 0
    goneFor.clear()
    open.clear()
    original = globalThis.fetch
    const inner = original
    globalThis.fetch = async (input, init) => {
      const base = origin()
      if (typeof input !== "string" && !(input instanceof URL)) return inner(input, init)
      const url = new URL(input)
      if (base === undefined || url.origin !== new URL(base).origin) return inner(input, init)
      const prefix = /^\/~([^/]+)(\/.*)$/.exec(url.pathname)
      const page = prefix?.[1] ?? ""
      const path = (prefix?.[2] ?? url.pathname) + url.search
      const method = init?.method ?? "GET"
      if (goneFor.has(page)) {
        exchanges.push({ page, method, path, status: 0 })
        throw gone()
      }
      const h = holds.findIndex((x) => x.method === method && x.path.test(path))
      if (h >= 0) {
        const held = holds.splice(h, 1)[0]!
        held.arrived()
        await held.goOn
      }
      const response = await inner(`${url.origin}${path}`, init)
      const json = response.headers.get("content-type")?.includes("application/json") === true
      exchanges.push({
        page,
        method,
        path,
        status: response.status,
        runId: response.headers.get("x-run-id"),
        requestId: response.headers.get("x-request-id"),
        ...(json ? { body: await response.clone().json() } : {})
      })
      const i = cuts.findIndex((c) => c.method === method && c.path.test(path))
      const cutAt = i < 0 ? undefined : cuts.splice(i, 1)[0]!.at
      return json ? response : wrap(page, response, cutAt)
    }
  })
  afterEach(() => {
    for (const letGo of letGos.splice(0)) letGo()
    for (const bodies of open.values()) for (const kill of bodies) kill()
    if (original !== undefined) globalThis.fetch = original
  })

  return {
    exchanges,
    /** The `baseUrl` of a page called `name`. */
    page: (name: string) => `${origin()}/~${name}`,
    /** Cuts the body of the next response to `method` `path` where `at` says. */
    cut: (method: string, path: RegExp, at: CutAt) => void cuts.push({ method, path, at }),
    /**
     * Keeps the next request to `method` `path` from the server until `letGo()` (a network that
     * is down for a while: the request is sent, and reaches the server late). Recorded once it
     * is answered.
     */
    hold: (method: string, path: RegExp): Held => {
      let arrived!: () => void
      let letGo!: () => void
      const arrival = new Promise<void>((resolve) => {
        arrived = resolve
      })
      const goOn = new Promise<void>((resolve) => {
        letGo = resolve
      })
      holds.push({ method, path, arrived, goOn })
      letGos.push(letGo)
      return { arrived: arrival, letGo }
    },
    /**
     * Takes page `name` off the network, as a reload does to the page it replaces: its open
     * bodies drop, its later requests fail as aborted ones.
     */
    takeAway: (name: string) => {
      goneFor.add(name)
      for (const kill of open.get(name) ?? []) kill()
    }
  }
}
