/**
 * A streamed response's last frame and its end leave in one socket write (Http.ts `endStream`),
 * on a real Node HTTP server whose body is piped as the platform pipes it.
 */
import { createServer, request as httpRequest } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { PassThrough } from "node:stream"
import { pipeline } from "node:stream/promises"
import { afterEach, describe, expect, it } from "vitest"
import { endStream } from "../src/Http.js"

/** Counts the writes the socket makes (one per `_write`/`_writev`: a system call each). */
const countWrites = (socket: Socket) => {
  const counted = { writes: 0 }
  const target = socket as unknown as Record<"_write" | "_writev", (...args: Array<unknown>) => unknown>
  for (const method of ["_write", "_writev"] as const) {
    const original = target[method]!.bind(socket)
    target[method] = (...args: Array<unknown>) => {
      counted.writes++
      return original(...args)
    }
  }
  return counted
}

let close: (() => Promise<void>) | undefined
afterEach(async () => {
  await close?.()
  close = undefined
})

/** Serves one streamed response: a first frame at once, then `finish(socket, out)`; reads the body. */
const serve = async (finish: (socket: Socket, out: PassThrough) => void) => {
  let counted: { writes: number } | undefined
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" })
    const out = new PassThrough()
    void pipeline(out, res)
    out.write(": ok\n\n")
    setTimeout(() => {
      counted = countWrites(req.socket)
      finish(req.socket, out)
    }, 20)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  close = () => new Promise<void>((resolve) => server.close(() => resolve()))
  const { port } = server.address() as AddressInfo
  const body = await new Promise<string>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: "/", agent: false }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
      })
      res.on("end", () => resolve(text))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })
  return { body, writes: counted?.writes }
}

describe("endStream", () => {
  it("writes the last frame and the response's end in one socket write", async () => {
    const { body, writes } = await serve((socket, out) => endStream(socket, out, "event: done\ndata: {}\n\n"))
    expect(body).toBe(": ok\n\nevent: done\ndata: {}\n\n")
    expect(writes).toBe(1)
  })

  it("without it, Node writes the end apart (what the test above guards against)", async () => {
    const { body, writes } = await serve((_socket, out) => {
      out.write("event: done\ndata: {}\n\n")
      out.end()
    })
    expect(body).toBe(": ok\n\nevent: done\ndata: {}\n\n")
    expect(writes).toBe(2)
  })

  it("leaves a stream that has already ended as it is", async () => {
    const { body } = await serve((socket, out) => {
      out.end("event: error\ndata: {}\n\n")
      endStream(socket, out, "never written")
    })
    expect(body).toBe(": ok\n\nevent: error\ndata: {}\n\n")
  })
})
