/**
 * `plugboard console`: opens the dev console of a running oracle for the local user (README "Dev
 * console"). It mints a fresh UCAN invocation as `plugboard token` does and puts it in the URL
 * fragment (`#token=…`), never the query string: a browser sends neither the fragment to the
 * server nor into a Referer, so the token stays out of access logs and other sites.
 */
import { spawn } from "node:child_process"
import { describe } from "@plugboard/core"
import { loadOrCreateSigner, mintInvocation } from "@plugboard/ucan"
import { Data } from "effect"
import type { ServerConfig } from "../Config.js"

/** Why the console cannot be opened: one line for the user. */
export class ConsoleOpenError extends Data.TaggedError("ConsoleOpenError")<{ readonly message: string }> {
  // Thrown to the CLI's plain code: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
  constructor(message: string) {
    super({ message })
  }
}

/** Opens `url` in the desktop's browser (xdg-open, open, or start); rejects when none ran. */
export const openInBrowser = (url: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const [command, args] =
      process.platform === "darwin"
        ? ["open", [url]]
        : process.platform === "win32"
          ? ["cmd", ["/c", "start", "", url]]
          : ["xdg-open", [url]]
    const child = spawn(command, args as Array<string>, { stdio: "ignore", detached: true })
    child.once("error", reject)
    child.once("spawn", () => {
      child.unref()
      resolve()
    })
  })

/** The console's address with a fresh token of the local user in its fragment. */
export const consoleLink = async (options: {
  readonly url: string
  readonly config: ServerConfig
  readonly ttlSeconds: number
  readonly fetch?: typeof fetch
}): Promise<string> => {
  const get = options.fetch ?? fetch
  const base = options.url.replace(/\/+$/, "")
  let oracleDid: string
  try {
    // The token's audience is the oracle that answers there, whatever key file this machine has.
    const health = await get(`${base}/health`)
    const body = (await health.json()) as { oracleDid?: unknown }
    if (typeof body.oracleDid !== "string")
      throw new Error(`GET /health answered ${health.status} without oracleDid`)
    oracleDid = body.oracleDid
  } catch (error) {
    throw new ConsoleOpenError(
      `No oracle answers at ${base} (${describe(error)}): start one with \`pnpm plugboard serve\`, or pass --url.`
    )
  }
  const page = await get(`${base}/console`).catch(() => undefined)
  await page?.body?.cancel().catch(() => undefined)
  if (page?.status === 404) {
    throw new ConsoleOpenError(
      `The console is off on the oracle at ${base}: it is on by default only when the server listens on a loopback address; set CONSOLE=true on the server to serve it elsewhere.`
    )
  }
  const user = (await loadOrCreateSigner(options.config.userKeyFile)).signer
  const token = await mintInvocation({
    issuer: user,
    audience: oracleDid,
    ttlSeconds: options.ttlSeconds,
    resource: options.config.ucanResource
  })
  return `${base}/console#token=${encodeURIComponent(token)}`
}
