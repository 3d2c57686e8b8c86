/**
 * Reading a request of the gateway's HTTP side before the SDK sees it (http.ts): a refusal's
 * answer, the body read once and bounded, and the few header shapes the checks need.
 */
import { createHash } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"

/** A refusal: an HTTP status and a JSON-RPC error body. */
export const refuse = (
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {}
): void => {
  if (res.headersSent) {
    res.end()
    return
  }
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null })
  res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(body)
}

/** SHA-256 of `text`: the bearer credential is compared as digests of equal length. */
export const digest = (text: string): Buffer => createHash("sha256").update(text).digest()

/** The host name of a `Host` header or of an origin, without port or IPv6 brackets. */
export const hostName = (value: string): string => {
  const v = value.trim().toLowerCase()
  if (v.startsWith("[")) return v.slice(1, v.indexOf("]"))
  const colon = v.lastIndexOf(":")
  return colon < 0 ? v : v.slice(0, colon)
}

/** The first value of a header Node may give as a list. */
export const first = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : (value as string | undefined)

/** Reads a body up to `max` bytes; `undefined` when it is larger (the rest is not read). */
export const readBody = (req: IncomingMessage, max: number): Promise<string | undefined> =>
  new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"])
    if (Number.isFinite(declared) && declared > max) {
      resolve(undefined)
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        req.removeAllListeners("data")
        resolve(undefined)
        return
      }
      chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

/** Whether a body (a message or a batch) opens a 2025-era session. */
export const isInitialize = (message: unknown): boolean =>
  Array.isArray(message)
    ? message.some(isInitialize)
    : typeof message === "object" &&
      message !== null &&
      (message as { method?: unknown }).method === "initialize"
