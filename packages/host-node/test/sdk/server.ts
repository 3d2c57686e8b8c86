/**
 * The SDK tests' server process: `start()` (test/helpers.ts) with the plugins named in argv[2]
 * (comma-separated: weather, slow-job, credits), on 127.0.0.1 and a random port; it also mints the
 * users' UCAN tokens, standing in for their wallets. argv[3], when given, is JSON `{ pace, env }`:
 * with `pace` the router's answers are paced (model.ts), and held ones go on at each `release`;
 * `env` is added to the server's environment (`RUN_RETENTION_MS`, ...).
 *
 * It runs in a process of its own because vitest's jsdom environment replaces the typed-array
 * globals (Uint8Array, ArrayBuffer, ...) with jsdom's: Node's WebCrypto then refuses the bytes
 * ucanto signs ("2nd argument is not instance of ArrayBuffer ..."), in the server and in a
 * minting test alike. A separate process is also what a real front end talks to.
 *
 * Protocol (Node IPC): it sends `{ type: "ready", url, oracleDid }`, answers
 * `{ id, type: "user" }` with `{ id, did }` and `{ id, type: "delegation" | "invocation", did,
 * ttlSeconds }` with `{ id, token }` (or `{ id, error }`), `{ id, type: "release" }` (one held
 * answer goes on) with `{ id }`, `{ id, type: "top-up", did, amount }` (the host's credit API,
 * `app.credits`) and `{ id, type: "balance", did }` with `{ id, balance }`, `{ id, type: "get",
 * did, path }` (an authenticated GET of the user, from this process, its body left unread) with
 * `{ id, status }`, and stops on `{ type: "stop" }` or when the parent goes away.
 */

import type { Plugin } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { encodeToken, generateSigner, mintDelegation, mintInvocation, type Signer } from "@plugboard/ucan"
import { creditsPlugin } from "../../src/index.js"
import { start, weather } from "../helpers.js"
import { Gate, type Pace, pacedRouter } from "./model.js"
import { slowJob } from "./plugins.js"

const catalog: Record<string, () => Plugin> = {
  weather: () => weather,
  "slow-job": () => slowJob(300),
  // The silent credits plugin: its presence turns on the server's credit check (402 on an empty
  // balance); it charges each model call by its token usage.
  credits: () => creditsPlugin
}

const send = (message: unknown) => process.send?.(message)

const plugins = (process.argv[2] ?? "weather").split(",").map((name) => {
  const make = catalog[name]
  if (make === undefined) throw new Error(`unknown plugin '${name}'`)
  return make()
})
const options = JSON.parse(process.argv[3] ?? "{}") as {
  readonly pace?: Pace
  readonly env?: Record<string, string>
}
const gate = new Gate()
const pace = options.pace
const server = await start({
  plugins,
  ...(options.env === undefined ? {} : { env: options.env }),
  ...(pace === undefined ? {} : { model: (catalog) => pacedRouter(catalog, pace, gate) })
})
const signers = new Map<string, Signer>()

let stopping: Promise<void> | undefined
const stop = () => {
  stopping ??= server.stop().finally(() => process.exit(0))
  return stopping
}

interface Request {
  readonly id?: number
  readonly type: "user" | "delegation" | "invocation" | "release" | "top-up" | "balance" | "get" | "stop"
  readonly did?: string
  readonly ttlSeconds?: number
  readonly amount?: number
  readonly path?: string
}

const answer = async (request: Request): Promise<Record<string, unknown>> => {
  if (request.type === "release") {
    gate.release()
    return {}
  }
  if (request.type === "user") {
    const signer = await generateSigner()
    signers.set(signer.did(), signer)
    return { did: signer.did() }
  }
  if (request.type === "top-up") {
    return { balance: await server.app.credits.topUp(request.did ?? "", request.amount ?? 0) }
  }
  if (request.type === "balance") return { balance: await server.app.credits.balance(request.did ?? "") }
  const issuer = signers.get(request.did ?? "")
  if (issuer === undefined) throw new Error(`no user '${request.did}'`)
  const options = { issuer, audience: server.app.oracleDid, ttlSeconds: request.ttlSeconds ?? 600 }
  if (request.type === "get") {
    // As the SDK asks: the user's delegation and an invocation (`authHeaders`, dist/index.js:1920).
    const response = await fetch(`${server.url}${request.path ?? "/"}`, {
      headers: {
        "x-ucan-delegation": await encodeToken(await mintDelegation(options)),
        authorization: `Bearer ${await mintInvocation(options)}`,
        "x-auth-type": "ucan"
      }
    })
    await response.body?.cancel()
    return { status: response.status }
  }
  return request.type === "delegation"
    ? { token: await encodeToken(await mintDelegation(options)) }
    : { token: await mintInvocation(options) }
}

process.on("message", (request: Request) => {
  if (request.type === "stop") return void stop()
  answer(request).then(
    (result) => send({ id: request.id, ...result }),
    (error: unknown) => send({ id: request.id, error: describe(error) })
  )
})
process.on("disconnect", () => void stop())
send({ type: "ready", url: server.url, oracleDid: server.app.oracleDid })
