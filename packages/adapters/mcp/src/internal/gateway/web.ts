/**
 * Between Node's HTTP server and the SDK v2's web-standard serving (`Request` in, `Response` out):
 * the gateway reads and checks a request itself (http.ts), then hands the SDK a `Request` with the
 * same method, URL and headers, the body already parsed beside it, and a signal that aborts when
 * the client goes away; the SDK's `Response` is written back as it streams, so an SSE answer's
 * events (progress, `list_changed`) reach the client as they are sent.
 */
import type { IncomingMessage, ServerResponse } from "node:http"

/** The request as the SDK reads it: no body (it is given parsed), aborted when the response closes. */
export const webRequest = (req: IncomingMessage, res: ServerResponse, url: URL): Request => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    headers.set(name, Array.isArray(value) ? value.join(", ") : value)
  }
  const controller = new AbortController()
  res.once("close", () => {
    if (!res.writableFinished) controller.abort(new Error("The client closed the connection."))
  })
  return new Request(url, { method: req.method ?? "GET", headers, signal: controller.signal })
}

/** Writes `response` to `res`, streaming its body; stops reading it when the client goes away. */
export const sendWebResponse = async (response: Response, res: ServerResponse): Promise<void> => {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  res.writeHead(response.status, headers)
  if (response.body === null) {
    res.end()
    return
  }
  // An SSE stream's headers go out at once: the client waits for them before reading events.
  res.flushHeaders()
  const reader = response.body.getReader()
  const stop = () => {
    reader.cancel().catch(() => {})
  }
  res.once("close", stop)
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (res.destroyed) break
      res.write(value)
    }
  } catch {
    // The stream was cancelled (the client went away) or failed; either way the response ends.
  } finally {
    res.off("close", stop)
    if (!res.destroyed) res.end()
  }
}
