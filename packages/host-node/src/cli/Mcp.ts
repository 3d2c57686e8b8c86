/**
 * `plugboard mcp [module] [--mcp FILE] [--skills DIR] [--thread ID] [--http PORT [--host H]] [--open] [--callback-port P]`:
 * the catalog served as an MCP server (docs/mcp-gateway.md). The composition only: the catalog
 * booted as serve boots it (`CatalogBoot`), the gateway of `@plugboard/mcp` over it, the SQLite
 * store of threads named by key (`<data>/loaded-plugins.sqlite`), and a transport: stdio (the
 * default: the client starts this process), or Streamable HTTP at `/mcp`. Either serves MCP
 * 2026-07-28 and the 2025 revisions, each client in the era it opens with
 * (docs/mcp-gateway.md#revisions).
 *
 * The credential: HTTP on a loopback address needs none (only local processes reach it, and a
 * browser page of another site is refused by Host and Origin); bound to any other address, every
 * request must carry `Authorization: Bearer <token>`, the token read from `PLUGBOARD_MCP_TOKEN` or
 * from the file `--token-file` names, and boot is refused without one. Not a `--token` flag: a
 * command line is readable by every user of the machine (`ps`).
 *
 * An `auth: "oauth"` server of the MCP config is connected by the local user in their browser
 * (McpOAuth.ts): the link is printed to stderr, opened with `--open`.
 */
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { isIP } from "node:net"
import { join, resolve } from "node:path"
import { type Access, Catalog, describe, LoadedPluginsStore, type RuntimeLogger } from "@plugboard/core"
import { type Gateway, makeGateway } from "@plugboard/mcp"
import { loadedPluginsFile, makeLoadedPluginsStore } from "@plugboard/sqlite"
import { loadOrCreateSigner, type Signer } from "@plugboard/ucan"
import { Cause, Effect, Either, Exit, Scope } from "effect"
import { OracleBootError } from "../App.js"
import { bootCatalog, loadBudgetFromEnv } from "../CatalogBoot.js"
import { envValue } from "../EnvValue.js"
import { makeConsoleLogger } from "../Logger.js"
import { skillsRunFromEnv } from "../SkillsRun.js"
import type { CliIO } from "./Commands.js"
import { grantsFlag, parseFlags, wholeNumber } from "./Flags.js"
import { loadModuleOrSources } from "./LoadModule.js"
import { type GatewayOAuth, gatewayOAuth } from "./McpOAuth.js"
import { signalled } from "./Signals.js"
import { UsageError } from "./UsageError.js"

/** The variable holding the bearer token of an HTTP gateway. */
export const TOKEN_VARIABLE = "PLUGBOARD_MCP_TOKEN"
/** The shortest token accepted: 32 characters (`openssl rand -hex 32` gives 64). */
export const MIN_TOKEN_LENGTH = 32

/** The host names a loopback gateway answers to (its `Host` and `Origin` checks). */
const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1"]

/** Whether `host` is a loopback address or name: no credential is needed there. */
export const isLoopback = (host: string): boolean => {
  const h = host.toLowerCase()
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true
  return isIP(h) === 4 && h.startsWith("127.")
}

/** What the streams of the process are, so tests can run the command in-process. */
export interface McpStreams {
  readonly stdin: NodeJS.ReadableStream
  readonly stdout: NodeJS.WritableStream
  /** Resolves when the command should stop (default: SIGINT or SIGTERM). */
  readonly stop?: Promise<string> | undefined
  /** Told the HTTP address once listening (tests). */
  readonly onListening?: ((url: string) => void) | undefined
}

interface Options {
  readonly module: string | undefined
  readonly mcp: string | undefined
  readonly skills: string | undefined
  readonly thread: string | undefined
  readonly http: number | undefined
  readonly host: string
  readonly tokenFile: string | undefined
  readonly grants: ReadonlyArray<Access.Capability>
  readonly open: boolean
  readonly callbackPort: number
}

const FLAGS = ["mcp", "skills", "thread", "http", "host", "token-file", "grant", "callback-port"] as const

const parse = (argv: ReadonlyArray<string>, resource: string): Options => {
  const { positional, flags } = parseFlags(argv, FLAGS, ["open"], (name) =>
    name === "token"
      ? `There is no --token: a command line is visible to every user of the machine. Set ${TOKEN_VARIABLE}, or give --token-file FILE.`
      : undefined
  )
  if (positional.length > 1) throw new UsageError("mcp takes at most one module.")
  let http: number | undefined
  if (flags.http !== undefined) {
    http = /^\d+$/.test(flags.http) ? Number(flags.http) : Number.NaN
    if (!Number.isSafeInteger(http) || http > 65535) {
      throw new UsageError(
        `--http must be a port from 0 to 65535 (0 = any free port), got ${JSON.stringify(flags.http)}.`
      )
    }
  }
  if (http === undefined && (flags.host !== undefined || flags["token-file"] !== undefined)) {
    throw new UsageError(
      `--${flags.host !== undefined ? "host" : "token-file"} is for --http; over stdio the client starts this process.`
    )
  }
  if (http !== undefined && flags.thread !== undefined) {
    throw new UsageError(
      "--thread is for stdio: over HTTP each client names its thread, with ?thread=<id> on the URL or the header X-Plugboard-Thread."
    )
  }
  if (flags.thread !== undefined) {
    const problem = LoadedPluginsStore.keyProblem(flags.thread)
    if (problem !== undefined) throw new UsageError(`--thread: ${problem}.`)
  }
  if (http !== undefined && flags["callback-port"] !== undefined) {
    throw new UsageError(
      "--callback-port is for stdio: over --http the OAuth callback is on the --http port."
    )
  }
  const callbackPort =
    flags["callback-port"] === undefined
      ? 0
      : wholeNumber("--callback-port", flags["callback-port"], 0, 65535)
  const grants = grantsFlag(flags.grant, resource)
  return {
    module: positional[0],
    mcp: flags.mcp,
    skills: flags.skills,
    thread: flags.thread,
    http,
    host: flags.host ?? "127.0.0.1",
    tokenFile: flags["token-file"],
    grants,
    open: flags.open === "true",
    callbackPort
  }
}

/** The bearer token of an HTTP gateway, or the boot error saying why it is missing or unusable. */
const readToken = (options: Options, io: CliIO): string | undefined => {
  const fromEnv = envValue(io.env[TOKEN_VARIABLE])
  if (fromEnv !== undefined && options.tokenFile !== undefined) {
    throw new UsageError(`Give the token once: ${TOKEN_VARIABLE} is set and --token-file is given.`)
  }
  let token = fromEnv
  if (options.tokenFile !== undefined) {
    const file = resolve(io.cwd, options.tokenFile)
    try {
      token = readFileSync(file, "utf8").trim()
    } catch (error) {
      throw new OracleBootError([
        `[boot-error] --token-file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"}).`
      ])
    }
  }
  if (token !== undefined && (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))) {
    throw new OracleBootError([
      `[boot-error] The MCP gateway's token must be at least ${MIN_TOKEN_LENGTH} characters without spaces (e.g. openssl rand -hex 32).`
    ])
  }
  return token
}

/** The gateway's user: the local user (`USER_KEY_FILE`), whom `plugboard chat` speaks as too. */
const localUser = async (dataDir: string, io: CliIO): Promise<string> =>
  (await loadOrCreateSigner(envValue(io.env.USER_KEY_FILE) ?? join(dataDir, "user.key"))).signer.did()

/** Runs `plugboard mcp`; resolves with the exit code once the client or a signal stopped it. */
export const mcp = async (argv: ReadonlyArray<string>, io: CliIO, streams?: McpStreams): Promise<number> => {
  // Grants are abilities on the oracle's resource, as `plugboard token --grant` mints them.
  const options = parse(argv, envValue(io.env.UCAN_RESOURCE) ?? "ixo:oracle")
  const token = options.http === undefined ? undefined : readToken(options, io)
  if (options.http !== undefined && token === undefined && !isLoopback(options.host)) {
    throw new OracleBootError([
      `[boot-error] plugboard mcp --http on ${options.host} needs a credential: set ${TOKEN_VARIABLE} (or --token-file FILE) to a token of at least ${MIN_TOKEN_LENGTH} characters; every request must then carry Authorization: Bearer <token>. On a loopback address (the default, 127.0.0.1) none is needed.`
    ])
  }
  const env = io.env
  const dataDir = resolve(io.cwd, envValue(env.PLUGBOARD_DATA_DIR) ?? ".plugboard")
  // stdout is the protocol over stdio: every log line goes to stderr.
  const level =
    env.LOG_LEVEL === "debug" || env.LOG_LEVEL === "warn" || env.LOG_LEVEL === "error"
      ? env.LOG_LEVEL
      : "info"
  const logger: RuntimeLogger = makeConsoleLogger({ level, write: (line) => io.err(`${line}\n`) })

  const loaded = await loadModuleOrSources(
    options.module,
    io.cwd,
    (options.mcp ?? envValue(env.MCP_CONFIG) ?? options.skills ?? envValue(env.SKILLS_DIR)) !== undefined
  )
  const plugins = loaded.kind === "catalog" ? loaded.catalog.entries.map((e) => e.plugin) : loaded.plugins
  let oracle: Promise<Signer> | undefined
  const oracleKey = () => {
    oracle ??= loadOrCreateSigner(envValue(env.ORACLE_KEY_FILE) ?? join(dataDir, "oracle.key")).then(
      (k) => k.signer
    )
    return oracle
  }
  const idle = Number(env.MCP_IDLE_MS)
  const cacheDir = resolve(io.cwd, envValue(env.MCP_CACHE_DIR) ?? join(dataDir, "mcp-cache"))
  const budget = loadBudgetFromEnv(env)
  if (Either.isLeft(budget)) throw new OracleBootError([budget.left])
  // The calls of `auth: "oauth"` servers go to the gateway's connections, built after the boot.
  let oauth: GatewayOAuth | undefined
  const oauthOf = (server: string) => {
    if (oauth === undefined)
      throw new TypeError(
        `MCP server '${server}' was called before the gateway's OAuth connections were built.`
      )
    return oauth.forwarded
  }
  const skillsRun = skillsRunFromEnv(env, io.cwd)
  if (Either.isLeft(skillsRun)) throw new OracleBootError([skillsRun.left])
  const booted = await bootCatalog(plugins, {
    loadBudgetTokens: budget.right,
    mcpServers: options.mcp ?? envValue(env.MCP_CONFIG),
    skills: options.skills ?? envValue(env.SKILLS_DIR),
    skillsRun: skillsRun.right,
    manifestOverrides: envValue(env.MANIFEST_OVERRIDES),
    cwd: io.cwd,
    cacheDir,
    oauth: {
      headers: (user, server) => Effect.suspend(() => oauthOf(server).headers(user, server)),
      renew: (user, server) => Effect.suspend(() => oauthOf(server).renew(user, server))
    },
    ...(Number.isSafeInteger(idle) && idle > 0 ? { idleMs: idle } : {}),
    signer: async () => oracleKey().catch(() => undefined),
    logger
  })
  if (Either.isLeft(booted)) throw new OracleBootError(booted.left.errors)
  const { catalog, sources } = booted.right
  // The catalog served now: boot's, until a first connect's tool list rebuilds it.
  let current = catalog
  const scope = Effect.runSync(Scope.make())
  let gateway: Gateway | undefined
  try {
    const shared = await Effect.runPromise(Effect.either(Catalog.readSharedState(catalog)))
    if (Either.isLeft(shared)) throw new OracleBootError(shared.left.errors.map((e) => `[boot-error] ${e}`))
    const did = await localUser(dataDir, io)
    let httpBase: string | undefined
    oauth = await gatewayOAuth({
      servers: sources.servers,
      catalog,
      env,
      dataDir,
      cacheDir,
      pool: sources.pool,
      logger,
      scope,
      did,
      httpBase:
        options.http === undefined
          ? undefined
          : () => {
              if (httpBase === undefined)
                throw new TypeError("The gateway's HTTP server is not listening yet.")
              return httpBase
            },
      callbackPort: options.callbackPort,
      open: options.open,
      err: io.err,
      // A first connect's tool list (docs/oauth.md#the-tool-list): the catalog built again as boot
      // built it, served from the next request on; every client is told its list changed.
      offer: async (server, description) => {
        const relist = booted.right.relist
        if (relist === undefined || gateway === undefined) return false
        const rebuilt = relist(current, server, description)
        current = Either.isRight(rebuilt) ? rebuilt.right : rebuilt.left.catalog
        gateway.replaceCatalog(current)
        const unavailable = Either.isLeft(rebuilt)
          ? rebuilt.left.reason
          : current.byName.get(server.name)?.unavailable
        if (unavailable !== undefined) logger.warn(unavailable, { server: server.name, plugin: server.name })
        else
          logger.info("an OAuth server's plugin is offered: its tool list was read when you connected", {
            server: server.name,
            plugin: server.name
          })
        return unavailable === undefined
      }
    })
    const invocationsFor = sources.invocationsFor
    let minted: { readonly at: number; readonly value: Promise<Record<string, string>> } | undefined
    // Threads named by key live in one file, opened on first use (a stdio gateway naming none
    // never opens it); `--thread` opens it at once, so a bad file is a boot error.
    const filename = loadedPluginsFile(dataDir)
    const openStore = () =>
      Effect.runPromiseExit(Scope.extend(makeLoadedPluginsStore({ filename }), scope)).then((exit) => {
        if (Exit.isSuccess(exit)) return exit.value
        throw Cause.squash(exit.cause)
      })
    const store =
      options.thread === undefined
        ? undefined
        : await openStore().catch((error: unknown) => {
            throw new OracleBootError([`[boot-error] ${describe(error)}`])
          })
    gateway = makeGateway({
      catalog,
      did,
      grants: options.grants,
      shared: shared.right,
      logger,
      threads: store ?? openStore,
      ...(oauth === undefined ? {} : { pending: oauth.pending }),
      ...(invocationsFor === undefined
        ? {}
        : {
            // A forwarded invocation is valid 5 minutes: one minted set serves 4.
            invocations: async () => {
              if (minted === undefined || Date.now() - minted.at > 240_000) {
                minted = { at: Date.now(), value: oracleKey().then((signer) => invocationsFor(signer, did)) }
              }
              return minted.value
            }
          })
    })
    const always = catalog.entries.filter((e) => e.visibility === "always").length
    const summary = `${catalog.entries.length} plugin${catalog.entries.length === 1 ? "" : "s"} (${always} always-tier)`
    return options.http === undefined
      ? await serveStdio(gateway, options, summary, io, streams)
      : await serveHttp(gateway, options, token, summary, io, streams, oauth, (base) => {
          httpBase = base
        })
  } finally {
    await gateway?.close()
    await oauth?.close()
    await sources.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** Over stdio until the client closes its end (or a signal): one session, this process. */
const serveStdio = async (
  gateway: Gateway,
  options: Options,
  summary: string,
  io: CliIO,
  streams: McpStreams | undefined
): Promise<number> => {
  const stdin = streams?.stdin ?? process.stdin
  const ended = new Promise<string>((resolve) => {
    stdin.once("end", () => resolve("end"))
    stdin.once("close", () => resolve("end"))
  })
  const connection = await gateway.stdio({ stdin, stdout: streams?.stdout, thread: options.thread })
  io.err(
    `plugboard mcp: ${summary} over stdio (MCP 2026-07-28 or 2025-11-25, as the client opens); thread: ${options.thread === undefined ? "this process's (in memory)" : `'${options.thread}' (kept)`}\n`
  )
  await Promise.race([ended, connection.closed, streams?.stop ?? signalled()])
  // Answers to requests sent just before the client closed its end still go out.
  await connection.settled()
  await new Promise((resolve) => setImmediate(resolve))
  await connection.close()
  return 0
}

/** Over Streamable HTTP at /mcp until a signal. */
const serveHttp = async (
  gateway: Gateway,
  options: Options,
  token: string | undefined,
  summary: string,
  io: CliIO,
  streams: McpStreams | undefined,
  oauth: GatewayOAuth | undefined,
  onBase: (base: string) => void
): Promise<number> => {
  const loopback = isLoopback(options.host)
  const handler = gateway.http({
    ...(token === undefined ? {} : { bearerToken: token }),
    // A loopback server answers only for loopback names: a page of another site that resolves
    // its name to 127.0.0.1 (DNS rebinding) is refused by its Host.
    ...(loopback ? { allowedHosts: LOOPBACK_NAMES } : {})
  })
  // The OAuth links are public (the sealed ticket or state names the user): no bearer token.
  const server = createServer((request, response) => {
    if (oauth?.handle(request, response) === true) return
    void handler.handle(request, response)
  })
  await new Promise<void>((resolveListen, reject) => {
    server.once("error", reject)
    server.listen(options.http, options.host, () => {
      server.off("error", reject)
      resolveListen()
    })
  }).catch((error: unknown) => {
    throw new OracleBootError([
      `[boot-error] Cannot listen on ${options.host}:${options.http} (${(error as NodeJS.ErrnoException).code ?? "error"}); change --http or --host.`
    ])
  })
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : options.http
  const host = options.host.includes(":") ? `[${options.host}]` : options.host
  const url = `http://${host}:${port}/mcp`
  onBase(`http://${host}:${port}`)
  io.out(
    [
      `plugboard mcp listening on ${url}`,
      `  plugins     ${summary}`,
      `  credential  ${token === undefined ? "none (loopback only)" : "Authorization: Bearer <token> on every request"}`,
      "  revisions   2026-07-28 and 2025-11-25 (each client in the one it opens with)",
      "  threads     a 2025 session's own, or the endpoint's on 2026-07-28; or name one: ?thread=<id> or X-Plugboard-Thread: <id>",
      ""
    ].join("\n")
  )
  streams?.onListening?.(url)
  await (streams?.stop ?? signalled())
  await handler.close()
  server.closeAllConnections()
  await new Promise<void>((done) => server.close(() => done()))
  return 0
}
