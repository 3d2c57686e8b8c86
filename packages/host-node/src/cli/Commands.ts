/**
 * The `plugboard` commands: `serve`, `token`, `credits`, `chat`. Each takes its arguments and an
 * IO (so tests run them in-process) and returns an exit code: 0 ok, 1 failure, 2 usage error.
 */

import { type Catalog, Clock, CreditLedger, describe } from "@plugboard/core"
import { loadOrCreateSigner, mintDelegation, mintInvocation } from "@plugboard/ucan"
import { Data, Effect, Either } from "effect"
import { createOracleApp, OracleBootError } from "../App.js"
import * as ServerConfig from "../Config.js"
import { CREDITS_PLUGIN_NAME } from "../credits/CreditsPlugin.js"
import { creditLedgerLayer, databaseLayer } from "../Engines.js"
import { envValue } from "../EnvValue.js"
import { type Ask, ChatClientError, chatTurn, connectChat } from "./ChatClient.js"
import { ConsoleOpenError, consoleLink, openInBrowser } from "./Console.js"
import { grantsFlag, parseFlags, wholeNumber } from "./Flags.js"
import { loadModuleOrSources, ModuleLoadError } from "./LoadModule.js"
import { signalled } from "./Signals.js"
import { UsageError } from "./UsageError.js"

/** Where a command writes, and its environment. */
export interface CliIO {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string
  /** Asks the user a question (`plugboard chat`'s approvals); absent where nobody can answer. */
  readonly ask?: Ask | undefined
}

export { UsageError }

/** The server could not listen; `message` is one line naming PORT or HOST (or the flag) to change. */
export class ListenError extends Data.TaggedError("ListenError")<{ readonly message: string }> {
  // Thrown to the CLI's plain code: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
  constructor(message: string) {
    super({ message })
  }
}

const hostPort = (host: string, port: number) =>
  host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`

/** What to tell the user when `listen` fails, by the system error code. */
const listenFailure = (
  error: unknown,
  where: { readonly port: string; readonly host: string; readonly address: string }
): string => {
  const code = (error as { code?: unknown } | undefined)?.code
  const head = `[boot-error] Cannot listen on ${where.address}`
  switch (code) {
    case "EADDRINUSE":
      return `${head}: the port is already in use (EADDRINUSE); change ${where.port} (0 = any free port) or stop the process using it.`
    case "EACCES":
      return `${head}: permission denied (EACCES); ports below 1024 need privileges, change ${where.port} to 1024 or above.`
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
      return `${head}: the host name does not resolve (${code}); change ${where.host} to an address of this machine, e.g. 127.0.0.1 or 0.0.0.0.`
    case "EADDRNOTAVAIL":
      return `${head}: the address is not one of this machine's (EADDRNOTAVAIL); change ${where.host}, e.g. to 127.0.0.1 or 0.0.0.0.`
    default:
      return `${head} (check ${where.port} and ${where.host}): ${describe(error)}`
  }
}

export { parseFlags }

const loadConfig = async (io: CliIO) => {
  const result = await Effect.runPromise(Effect.either(ServerConfig.fromEnv(io.env, io.cwd)))
  if (Either.isLeft(result)) throw new OracleBootError(result.left.lines)
  return result.right
}

/**
 * `serve [module] [--port N] [--host H] [--mcp FILE] [--skills DIR]`: runs the oracle until
 * SIGTERM/SIGINT. Resolves when it has stopped; rejects with `ListenError` when the port or host
 * cannot be listened on. `--mcp` and `--skills` take precedence over `MCP_CONFIG` / `SKILLS_DIR`.
 */
export const serve = async (argv: ReadonlyArray<string>, io: CliIO): Promise<number> => {
  const { positional, flags } = parseFlags(argv, ["port", "host", "mcp", "skills"])
  if (positional.length > 1) throw new UsageError("serve takes at most one module.")
  const loaded = await loadModuleOrSources(
    positional[0],
    io.cwd,
    (flags.mcp ?? envValue(io.env.MCP_CONFIG) ?? flags.skills ?? envValue(io.env.SKILLS_DIR)) !== undefined
  )
  const plugins = loaded.kind === "catalog" ? loaded.catalog.entries.map((e) => e.plugin) : loaded.plugins
  const file = loaded.file
  const port = flags.port === undefined ? undefined : wholeNumber("--port", flags.port, 0, 65535)
  if (flags.host !== undefined && !ServerConfig.isListenHost(flags.host)) {
    throw new UsageError(
      `--host must be an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1) or a host name (e.g. localhost), got ${JSON.stringify(flags.host)}.`
    )
  }
  const app = await createOracleApp({
    plugins,
    env: io.env,
    cwd: io.cwd,
    ...(flags.mcp === undefined ? {} : { mcpServers: flags.mcp }),
    ...(flags.skills === undefined ? {} : { skills: flags.skills })
  })
  let url: string
  try {
    url = (await app.listen(port, flags.host)).url
  } catch (error) {
    // Storage is already open: close it before reporting, so nothing is left half-written.
    await app.close().catch(() => undefined)
    throw new ListenError(
      listenFailure(error, {
        port: port === undefined ? `PORT=${app.config.port}` : `--port ${port}`,
        host: flags.host === undefined ? `HOST=${app.config.host}` : `--host ${flags.host}`,
        address: hostPort(flags.host ?? app.config.host, port ?? app.config.port)
      })
    )
  }
  io.out(
    [
      `plugboard oracle '${app.config.oracleName}' listening on ${url}`,
      `  oracle DID  ${app.oracleDid}`,
      `  plugins     ${pluginSources(app.catalog, file)}`,
      `  model       ${app.config.model.provider}/${app.config.model.model}`,
      `  data        ${app.config.dataDir}`,
      `  credits     ${app.creditsEnabled ? "on" : app.catalog.byName.has(CREDITS_PLUGIN_NAME) ? "off (DISABLE_CREDITS=true)" : "off (no credits plugin)"}`,
      `  matrix      ${app.config.matrix === undefined ? "off" : app.config.matrix.baseUrl}`,
      `Try: ${tryChat(app.catalog, io.env)}`,
      ""
    ].join("\n")
  )
  const signal = await signalled()
  io.err(`\n${signal}: shutting down (deadline ${app.config.shutdownDeadlineMs} ms)…\n`)
  await app.close().catch((error: unknown) => {
    io.err(`shutdown failed: ${describe(error)}\n`)
  })
  io.out("stopped.\n")
  return 0
}

/**
 * The chat command to try once serving, as the user types it where they are (`pnpm plugboard` is
 * the repository's script, `npx plugboard` a project's bin), with a question from the catalog's
 * own manifest examples: an on-demand plugin's first when there is one (its turn shows a load and
 * a tool call), else any visible plugin's.
 */
const tryChat = (catalog: Catalog.Catalog, env: CliIO["env"]): string => {
  const cli = env.npm_lifecycle_event === "plugboard" ? "pnpm plugboard" : "npx plugboard"
  const visible = catalog.entries.filter((e) => e.visibility !== "silent")
  const example = [...visible.filter((e) => e.visibility === "on-demand"), ...visible]
    .flatMap((e) => e.manifest.examples ?? [])
    .find((x) => x.user.trim() !== "")
  return `${cli} chat ${JSON.stringify(example?.user ?? "What can you do?")}`
}

/** `55 from <file>`, or `60 (55 from <file>, 2 MCP servers, 3 skills)`: where the plugins came from. */
const pluginSources = (catalog: Catalog.Catalog, file: string | undefined): string => {
  let mcp = 0
  let skills = 0
  for (const e of catalog.entries) {
    if (e.source?.kind === "mcp") mcp++
    else if (e.source?.kind === "skill") skills++
  }
  const own = `${catalog.entries.length - mcp - skills} from ${file}`
  if (mcp === 0 && skills === 0) return file === undefined ? "none" : own
  const parts = file === undefined ? [] : [own]
  if (mcp > 0) parts.push(`${mcp} MCP server${mcp === 1 ? "" : "s"}`)
  if (skills > 0) parts.push(`${skills} skill${skills === 1 ? "" : "s"}`)
  return `${catalog.entries.length} (${parts.join(", ")})`
}

/** The local user's signer and the local oracle's DID (both kept under the data directory). */
const localIdentities = async (config: ServerConfig.ServerConfig) => {
  const user = (await loadOrCreateSigner(config.userKeyFile)).signer
  const oracle = (await loadOrCreateSigner(config.oracleKeyFile)).signer
  return { user, oracle, oracleDid: oracle.did() }
}

/**
 * `token [--ttl seconds] [--audience did] [--grant a/b,c/d]`: prints a fresh invocation for the
 * local user; with `--grant`, it carries those abilities on the oracle's resource, proven by a
 * delegation from the local oracle's key (docs/plugins.md#requiring-capabilities).
 */
export const token = async (argv: ReadonlyArray<string>, io: CliIO): Promise<number> => {
  const { positional, flags } = parseFlags(argv, ["ttl", "audience", "grant"])
  if (positional.length > 0) throw new UsageError("token takes no arguments.")
  const config = await loadConfig(io)
  const { user, oracle, oracleDid } = await localIdentities(config)
  const ttlSeconds = flags.ttl === undefined ? 300 : wholeNumber("--ttl", flags.ttl, 1, 900)
  const audience = flags.audience ?? oracleDid
  const grants = grantsFlag(flags.grant, config.ucanResource)
  const proofs =
    grants.length === 0
      ? []
      : [
          await mintDelegation({
            issuer: oracle,
            audience: user.did(),
            capabilities: grants,
            withoutOracleCapability: true,
            ttlSeconds
          })
        ]
  io.out(
    `${await mintInvocation({ issuer: user, audience, ttlSeconds, resource: config.ucanResource, capabilities: grants, proofs })}\n`
  )
  return 0
}

/**
 * `credits [balance | top-up <amount>] [--did did]`: the ledger the server charges, Postgres's with
 * `DATABASE_URL`, else the SQLite file at `CREDITS_DATABASE_PATH` (`Engines.creditLedgerLayer`).
 */
export const credits = async (argv: ReadonlyArray<string>, io: CliIO): Promise<number> => {
  const { positional, flags } = parseFlags(argv, ["did"])
  const [action = "balance", amountText, ...rest] = positional
  if (rest.length > 0 || !["balance", "top-up"].includes(action)) {
    throw new UsageError("Usage: plugboard credits [balance | top-up <amount>] [--did <did>]")
  }
  if (action === "top-up" && amountText === undefined) throw new UsageError("top-up needs an amount.")
  if (action === "balance" && amountText !== undefined) throw new UsageError("balance takes no amount.")
  const config = await loadConfig(io)
  const did = flags.did ?? (await loadOrCreateSigner(config.userKeyFile)).signer.did()
  const amount = amountText === undefined ? 0 : wholeNumber("amount", amountText, 1, Number.MAX_SAFE_INTEGER)
  const program = Effect.gen(function* () {
    const ledger = yield* CreditLedger.CreditLedger
    return action === "top-up"
      ? (yield* ledger.topUp(did, amount, "plugboard credits top-up")).balance
      : yield* ledger.balance(did)
  }).pipe(
    Effect.provide(creditLedgerLayer(config, databaseLayer(config))),
    // The ledger stamps entries from core's Clock port; the CLI runs on the live clock.
    Effect.provide(Clock.layer)
  )
  const result = await Effect.runPromise(Effect.either(program))
  if (Either.isLeft(result)) {
    io.err(`credits: ${result.left.message}\n`)
    return 1
  }
  io.out(`${did}: ${result.right} credit${result.right === 1 ? "" : "s"}\n`)
  return 0
}

/** `chat "<message>" [--url URL] [--session ID]`: one streamed turn, events printed as they come. */
export const chat = async (argv: ReadonlyArray<string>, io: CliIO): Promise<number> => {
  const { positional, flags } = parseFlags(argv, ["url", "session"])
  if (positional.length !== 1 || positional[0]!.trim() === "") {
    throw new UsageError('Usage: plugboard chat "<message>" [--url <url>] [--session <id>]')
  }
  const config = await loadConfig(io)
  const url = flags.url ?? `http://127.0.0.1:${config.port}`
  const signer = (await loadOrCreateSigner(config.userKeyFile)).signer
  const client = await connectChat({ url, signer, resource: config.ucanResource })
  try {
    let sessionId = flags.session
    if (sessionId === undefined) {
      sessionId = await client.createSession()
      io.out(`session ${sessionId}\n`)
    }
    return (await chatTurn(client, sessionId, positional[0]!, io.out, io.ask)) ? 0 : 1
  } catch (error) {
    // An HTTP refusal (401, 402, 429, ...) is an answer to print, not a crash.
    if (!(error instanceof ChatClientError) || error.status === undefined) throw error
    io.err(`${error.message}\n`)
    return 1
  }
}

/**
 * `console [--url URL] [--ttl seconds] [--print]`: opens the running oracle's dev console in the
 * browser with a fresh token of the local user in the URL fragment; `--print` (or no browser to
 * open) prints the link instead. `open` is injectable for tests.
 */
export const openConsole = async (
  argv: ReadonlyArray<string>,
  io: CliIO,
  open: (url: string) => Promise<void> = openInBrowser
): Promise<number> => {
  const print = argv.includes("--print")
  const { positional, flags } = parseFlags(
    argv.filter((a) => a !== "--print"),
    ["url", "ttl"]
  )
  if (positional.length > 0) throw new UsageError("console takes no arguments.")
  const config = await loadConfig(io)
  const ttlSeconds = flags.ttl === undefined ? 900 : wholeNumber("--ttl", flags.ttl, 1, 900)
  const url = flags.url ?? `http://127.0.0.1:${config.port}`
  let link: string
  try {
    link = await consoleLink({ url, config, ttlSeconds })
  } catch (error) {
    if (!(error instanceof ConsoleOpenError)) throw error
    io.err(`${error.message}\n`)
    return 1
  }
  const page = link.slice(0, link.indexOf("#"))
  if (!print) {
    try {
      await open(link)
      io.out(`Opened ${page} (a token valid ${ttlSeconds} s is in the link's fragment).\n`)
      return 0
    } catch {
      io.err("No browser could be opened; open this link yourself:\n")
    }
  }
  io.out(`${link}\n`)
  return 0
}

export { ModuleLoadError }
