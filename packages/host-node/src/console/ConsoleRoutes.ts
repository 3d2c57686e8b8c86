/**
 * The dev console's routes (docs/console.md): `GET /console`, the page (public: it holds no
 * data; the token it uses arrives in the URL fragment, which browsers never send), and its
 * read-only API under `/console/api/`, behind the same pipeline as every private route. When the
 * console is off every one of them answers the 404 of an unknown route, before any auth.
 */
import { isIP } from "node:net"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { Access } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { Effect } from "effect"
import { HttpFailure, json, searchParams } from "../Http.js"
import * as Assets from "./Assets.js"
import { type ConsoleData, ConsoleInputError } from "./ConsoleData.js"

/**
 * Whether `host` is a loopback interface (127.0.0.0/8, ::1, `localhost`): only this machine's
 * users can reach the server, so the console is on unless `CONSOLE=false`.
 */
export const isLoopback = (host: string): boolean => {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "")
  if (h === "localhost" || h.endsWith(".localhost")) return true
  if (isIP(h) === 4) return h.startsWith("127.")
  if (isIP(h) === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(h)
  return false
}

/** Whether the console is served: `CONSOLE` when set, else whether the server listens on loopback. */
export const enabled = (setting: boolean | undefined, listenHost: string): boolean =>
  setting ?? isLoopback(listenHost)

const toFailure = (error: unknown): HttpFailure =>
  error instanceof ConsoleInputError
    ? new HttpFailure({ status: 400, message: error.message, error: error.reason })
    : new HttpFailure({
        status: 500,
        message: `The console could not answer: ${describe(error)}`,
        error: "console-error"
      })

const attempt = <A>(run: () => Promise<A> | A) =>
  Effect.tryPromise({ try: async () => run(), catch: toFailure })

/** Answers JSON that only this user may see: never stored by a cache. */
const privateJson = (body: unknown) => json(body, 200, { "cache-control": "no-store" })

/** The console's handlers over `data`; `view` is the requesting user's (their grants). */
export const consoleHandlers = <R>(
  data: ConsoleData,
  oracleName: string,
  view: Effect.Effect<Access.View, never, R>
) => {
  const page = Effect.map(
    attempt(() => Assets.load()),
    (assets) =>
      HttpServerResponse.text(Assets.page(assets, { title: `${oracleName} · plugboard console` }), {
        contentType: "text/html; charset=utf-8",
        headers: {
          "cache-control": "no-store",
          "x-frame-options": "DENY",
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer"
        }
      })
  )
  const catalog = Effect.flatMap(view, (v) =>
    Effect.map(
      attempt(() => data.catalog(v)),
      privateJson
    )
  )
  const budget = Effect.flatMap(view, (v) =>
    Effect.map(
      attempt(() => data.budget(v)),
      privateJson
    )
  )
  const search = Effect.flatMap(Effect.zip(searchParams, view), ([params, v]) =>
    Effect.map(
      attempt(() => data.search(params.get("query") ?? "", v)),
      privateJson
    )
  )
  const offer = Effect.flatMap(Effect.zip(searchParams, view), ([params, v]) => {
    const raw = params.get("loaded") ?? ""
    const names = raw
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n !== "")
    return Effect.map(
      attempt(() => data.offer(names, v)),
      privateJson
    )
  })
  return { page, catalog, budget, search, offer }
}
