/**
 * `pnpm demo`: the oracle server on its embedded defaults, and a chat with it.
 *
 * 1. Boots the oracle with `createOracleApp` and the examples' catalog (55 plugins), exactly as
 *    `pnpm plugboard serve` does: no environment needed (data under `./.plugboard/` of the
 *    directory it was started from, the scripted offline model in router mode, credits off).
 *    It listens on `PORT` (default 3000), or on a free port when that one is taken.
 * 2. Chats with it as `pnpm plugboard chat` does — over real HTTP and SSE, as the local user,
 *    with a UCAN invocation per request: "What's the weather in Berlin?" (the model loads the
 *    `weather` plugin with `load_capability`, then calls `get_current_weather`; the answer
 *    streams in chunks), then a forecast on the same session (already loaded: no second load),
 *    then the weather in three cities (`CODE_MODE=on pnpm demo`: in one program, docs/code-mode.md).
 * 3. Prints how to talk to the running server, and serves until Ctrl-C / SIGTERM (graceful
 *    close). With `--once` it stops after the chat instead: exit code 0 when every turn answered.
 */

import { describe } from "@plugboard/core"
import { chatTurn, connectChat, createOracleApp, type OracleApp, OracleBootError } from "@plugboard/host-node"
import { loadOrCreateSigner } from "@plugboard/ucan"
import { examplePlugins } from "./catalog/index.js"

/**
 * The demo's conversation: one session, three turns. The last asks about three cities: one
 * weather call per model call, or with `CODE_MODE=on` one `run_code` program making all three.
 */
export const DEMO_MESSAGES = [
  "What's the weather in Berlin?",
  "And the forecast for Berlin this week?",
  "What's the weather in Berlin, Paris and Rome: which is warmest?"
] as const

const out = (text: string) => void process.stdout.write(text)
const err = (text: string) => void process.stderr.write(text)

const usage = (args: ReadonlyArray<string>) => {
  const unknown = args.filter((a) => a !== "--once")
  if (unknown.length > 0) {
    err(`Unknown argument ${unknown.map((a) => `'${a}'`).join(", ")}. Usage: pnpm demo [--once]\n`)
    process.exit(2)
  }
  return { once: args.includes("--once") }
}

const isAddressInUse = (error: unknown) => (error as { code?: unknown } | null)?.code === "EADDRINUSE"

/** Listens on the configured port, or on a free one (saying so) when it is taken. */
const listen = async (app: OracleApp): Promise<string> => {
  const wanted = app.config.port
  try {
    return (await app.listen()).url
  } catch (error) {
    if (!isAddressInUse(error) || wanted === 0) throw error
    const { url } = await app.listen(0)
    out(
      `Port ${wanted} is already in use (another oracle or program?); listening on ${url} instead.\n` +
        `(Set PORT to choose one.)\n\n`
    )
    return url
  }
}

const main = async (): Promise<number> => {
  const { once } = usage(process.argv.slice(2))
  // `pnpm demo` runs in the repository root; INIT_CWD is where it was typed (as for `pnpm plugboard`).
  const cwd = process.env.INIT_CWD ?? process.cwd()
  const app = await createOracleApp({ plugins: examplePlugins, cwd })
  let closed: Promise<void> | undefined
  const close = () => {
    closed ??= app.close()
    return closed
  }
  try {
    const url = await listen(app)
    out(
      [
        `plugboard oracle '${app.config.oracleName}' listening on ${url}`,
        `  oracle DID  ${app.oracleDid}`,
        `  plugins     ${app.catalog.entries.length} (the examples' catalog)`,
        `  model       ${app.config.model.provider}/${app.config.model.model}`,
        `  data        ${app.config.dataDir}`,
        "",
        "Chatting with it over HTTP + SSE as the local user (→ tool call started, ← its result, then",
        "the answer as it streams, ← done):",
        ""
      ].join("\n")
    )

    const signer = (await loadOrCreateSigner(app.config.userKeyFile)).signer
    const client = await connectChat({ url, signer, resource: app.config.ucanResource })
    const sessionId = await client.createSession("pnpm demo")
    out(`session ${sessionId}\n`)
    let ok = true
    for (const message of DEMO_MESSAGES) {
      out(`\n> ${message}\n`)
      ok = (await chatTurn(client, sessionId, message, out)) && ok
    }

    const local = url === "http://127.0.0.1:3000"
    const urlFlag = local ? "" : ` --url ${url}`
    out(
      [
        "",
        once
          ? "Done (--once): the oracle stops now. Without --once it keeps serving, and from another terminal in this directory:"
          : `The oracle keeps serving at ${url} — stop it with Ctrl-C. From another terminal in this directory:`,
        "",
        `  pnpm plugboard chat "Convert 250 euros to dollars."${urlFlag}`,
        `  pnpm plugboard chat "What's the weather in Tokyo?" --session ${sessionId}${urlFlag}`,
        "  TOKEN=$(pnpm -s plugboard token)",
        `  curl -s ${url}/sessions -H "Authorization: Bearer $TOKEN" -H "X-Auth-Type: ucan"`,
        `  curl -N -X POST ${url}/messages/${sessionId} -H "Authorization: Bearer $TOKEN" \\`,
        `    -H "X-Auth-Type: ucan" -H 'Content-Type: application/json' \\`,
        `    -d '{"message":"What is the weather in Tokyo?","stream":true}'`,
        ""
      ].join("\n")
    )
    if (once) {
      await close()
      return ok ? 0 : 1
    }
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        err(`\n${signal}: shutting down (deadline ${app.config.shutdownDeadlineMs} ms)…\n`)
        close().then(resolve, (error: unknown) => {
          err(`shutdown failed: ${describe(error)}\n`)
          resolve()
        })
      }
      process.once("SIGINT", () => stop("SIGINT"))
      process.once("SIGTERM", () => stop("SIGTERM"))
    })
    out("stopped.\n")
    return 0
  } catch (error) {
    await close().catch(() => {})
    throw error
  }
}

main().then(
  (code) => {
    process.exitCode = code
    // A stopped server may leave a library's idle handle behind; it must not keep the demo up.
    setTimeout(() => process.exit(code), 500).unref()
  },
  (error: unknown) => {
    if (error instanceof OracleBootError) for (const line of error.lines) err(`${line}\n`)
    else err(`demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(1)
  }
)
