/**
 * The server's configuration from the environment, read through Effect `Config` (so any
 * `ConfigProvider` works: `process.env`, a map in tests). Every variable is checked on its own and
 * every problem is reported at once, one line per variable, naming it: a server that fails to boot
 * should be fixed in one pass. The host calls this AFTER the catalog is built, so manifest errors
 * surface even when the environment is also wrong (docs/spec/manifest.md#at-boot).
 *
 * Defaults are the embedded default: nothing set at all boots a working local oracle with its
 * data under `./.plugboard/`.
 */
import { isIP } from "node:net"
import { isAbsolute, join, resolve } from "node:path"
import {
  Approval,
  Auth,
  CodeMode,
  Preload,
  ResultPages,
  TokenBudget,
  type TokenVault,
  TurnBounds
} from "@plugboard/core"
import { ConnectionsCipher } from "@plugboard/mcp"
import { type ChatModelSettings, DEFAULT_CALL_BOUNDS, envConfig, resolveSettings } from "@plugboard/models"
import { Config, ConfigProvider, Data, Effect, Either, Option } from "effect"
import { SKILLS_RUN_VARIABLES, type SkillsRun, skillsRunFromEnv } from "./SkillsRun.js"

/**
 * Default of `TURN_LOCK_TTL_MS`: the LangGraph adapter's `DEFAULT_THREAD_LOCK_TTL_MS` (not
 * imported: the configuration is read before any adapter that big is loaded).
 */
export const DEFAULT_TURN_LOCK_TTL_MS = 60_000

/** The checked server configuration. Paths are absolute. */
export interface ServerConfig {
  readonly port: number
  readonly host: string
  /** Root of the embedded default's data (`./.plugboard`). */
  readonly dataDir: string
  /** Directory of the per-user SQLite databases. */
  readonly sqliteDatabasePath: string
  /** Most per-user databases kept open at once (least recently used closed first). */
  readonly sqliteMaxOpen: number
  /** Newest checkpoints kept per thread; 0 keeps every checkpoint. */
  readonly sqliteKeepCheckpoints: number
  /** File of the SQLite credit ledger. */
  readonly creditsDatabasePath: string
  /** The oracle's private key (created on first boot when absent). */
  readonly oracleKeyFile: string
  /** The local user's private key used by `plugboard token` / `chat`. */
  readonly userKeyFile: string
  readonly oracleName: string
  /** The resource of the required `{ can: '*', with }` capability. */
  readonly ucanResource: string
  /**
   * DIDs besides the oracle's own whose delegations grant capabilities (`UCAN_GRANT_ISSUERS`): what
   * a plugin's `requires` is checked against (docs/plugins.md#requiring-capabilities).
   */
  readonly ucanGrantIssuers: ReadonlyArray<string>
  /**
   * How often one UCAN may authenticate (`UCAN_REPLAY`): `reuse` while it is valid (what
   * QiForge's client needs: it sends one invocation until it nearly expires), or `once`
   * (docs/spec/wire.md#replay).
   */
  readonly ucanReplay: "reuse" | "once"
  readonly throttleLimit: number
  readonly throttleTtlMs: number
  readonly disableCredits: boolean
  /** Credits a turn reserves before it runs (`CREDIT_RESERVE_ESTIMATE`); 402 when they are not available. */
  readonly creditReserveEstimate: number
  /** Least severe log record written (`LOG_LEVEL`). */
  readonly logLevel: "debug" | "info" | "warn" | "error"
  /** `text` (one readable line per record) or `json` (one JSON object per line). */
  readonly logFormat: "text" | "json"
  readonly heartbeatMs: number
  readonly shutdownDeadlineMs: number
  /** How long a client-side (browser) tool call waits for the client's answer over Socket.IO. */
  readonly clientToolTimeoutMs: number
  readonly maxBodyBytes: number
  /**
   * How long a client may take to send a whole request, headers and body (`REQUEST_TIMEOUT_MS`):
   * a slow or short body is answered 408 and its socket closed, instead of holding it for Node's
   * default five minutes. A streamed answer is not bounded by it (the request is in by then).
   */
  readonly requestTimeoutMs: number
  /** `Access-Control-Allow-Origin` for browser clients: `*` (default) or one origin, as browsers send it. */
  readonly corsOrigin: string
  /**
   * `/console` (`CONSOLE`): `true` on, `false` off, `undefined` on only when the server listens on
   * a loopback address (docs/console.md).
   */
  readonly console: boolean | undefined
  readonly model: ChatModelSettings
  /** Longest wait for a model call's first chunk (its answer, unstreamed) before it is aborted. */
  readonly llmConnectTimeoutMs: number
  /** Longest wait for a model call's first token of text, tool call or reasoning. */
  readonly llmFirstTokenTimeoutMs: number
  /** Longest silence between two chunks of a model's streamed answer. */
  readonly llmIdleTimeoutMs: number
  /** Most model calls in one turn. */
  readonly turnMaxModelCalls: number
  /** Most tool calls in one turn. */
  readonly turnMaxToolCalls: number
  /** Most tokens (every model call's input and output) in one turn. */
  readonly turnMaxTokens: number
  /** Longest a turn runs, from its first model call (checked before each model and tool call). */
  readonly turnTimeoutMs: number
  /** Identical tool calls (same tool, same arguments) that make the model be told; one more ends the turn. */
  readonly turnRepeatLimit: number
  /** `APPROVAL_TOOLS`: the tools the operator makes wait for their user's approval (docs/waiting.md). */
  readonly approvalTools: Approval.OperatorList
  /** `WAIT_TIMEOUT_MS`: how long a wait stays open before the host answers it `timed-out`. */
  readonly waitTimeoutMs: number
  /** `CONNECT_WAITS`: a load of a plugin the user has not connected waits for the connection (docs/waiting.md#connect-waits). */
  readonly connectWaits: boolean
  /** `LOAD_BUDGET_TOKENS`: a plugin whose load costs more is not loaded (docs/spec/token-budget.md#the-load-budget). */
  readonly loadBudgetTokens: number
  /** `TOOL_RESULT_MAX_CHARS`: a longer tool answer enters the thread as its first page (core's `ResultPages`). */
  readonly toolResultMaxChars: number
  /** Predictive preload (`PRELOAD`, core's `Preload.Mode`; docs/architecture.md#predictive-preload). */
  readonly preload: Preload.Mode
  /** Code mode (`CODE_MODE`, docs/code-mode.md): `run_code` offered over the offered tools. */
  readonly codeMode: CodeMode.Setting
  /** Matrix replication, `undefined` (disabled) unless all three variables are set. */
  readonly matrix: MatrixConfig | undefined
  /**
   * How long a user's successful restore from Matrix is trusted while their database is on disk:
   * within it a request costs no homeserver round trip (0 = ask before every request).
   */
  readonly matrixRecheckAfterMs: number
  /**
   * Per-request timeout of the Matrix client, and the longest a request waits for a user's
   * restore before it is served from the local state.
   */
  readonly matrixRequestTimeoutMs: number
  /** The MCP config file (`MCP_CONFIG`): every server in it is one plugin. */
  readonly mcpConfigFile: string | undefined
  /** Where MCP servers' tool lists are cached, so a restart spawns none of them. */
  readonly mcpCacheDir: string
  /** How long an unused MCP connection stays open (a stdio server's process with it). */
  readonly mcpIdleMs: number
  /**
   * The cipher that seals each user's OAuth connections at rest (`CONNECTIONS_KEY`, opening
   * those of `CONNECTIONS_KEY_PREVIOUS` too, docs/oauth.md#at-rest); undefined when the key is
   * unset (no OAuth connections can be kept).
   */
  readonly connectionsCipher: TokenVault.Cipher | undefined
  /**
   * `PUBLIC_URL`: the host's address as users' browsers reach it (scheme, host, optional port and
   * path, no trailing slash); the OAuth redirect URI is `<publicUrl>/oauth/callback`. Undefined:
   * the listen address (`http://<HOST>:<PORT>`), right only for a host users reach directly.
   */
  readonly publicUrl: string | undefined
  /** A folder of Agent Skills (`SKILLS_DIR`): every subfolder with a `SKILL.md` is one plugin. */
  readonly skillsDir: string | undefined
  /** Which skills may run their scripts (`SKILLS_RUN`, docs/skills-that-run.md); none when undefined. */
  readonly skillsRun: SkillsRun | undefined
  /**
   * An embedding model's folder (`EMBEDDING_MODEL`: `model.onnx` + `vocab.txt`, README "Routing
   * quality"): `list_capabilities` then ranks lexically and semantically fused; unset: lexically.
   */
  readonly embeddingModel: string | undefined
  /**
   * The operator's manifest overrides (`MANIFEST_OVERRIDES`): a JSON file or a JS/TS module, plugin
   * name → manifest fields (docs/plugins.md#manifest-overrides).
   */
  readonly manifestOverridesFile: string | undefined
  /** Whether `GET /health/plugins` answers without auth (`HEALTH_PLUGINS_PUBLIC`); default behind it. */
  readonly healthPluginsPublic: boolean
  /** The runs database: every streamed turn's numbered frames, for rejoins and resumes. */
  readonly runsDatabasePath: string
  /** How long an ended run (and its frames) can still be rejoined before it is pruned. */
  readonly runRetentionMs: number
  /**
   * The shared Postgres (`DATABASE_URL`): checkpoints, sessions, the credit ledger and runs live
   * there instead of this host's SQLite files. `undefined`: the embedded default.
   */
  readonly database: DatabaseConfig | undefined
  /**
   * The shared Redis (`REDIS_URL`): the rate limiter and the turn lock live there instead of this
   * process. `undefined`: the embedded default.
   */
  readonly redis: RedisConfig | undefined
  /**
   * Lease of a session's turn lock and of a run's liveness: a host that dies holding them frees
   * the session (and lets its run be reported interrupted) this long after its last refresh.
   */
  readonly turnLockTtlMs: number
}

/** The shared Postgres of a deployment of several hosts. */
export interface DatabaseConfig {
  /** `postgres://user:password@host:port/database`. */
  readonly url: string
  /** The schema holding every table (default `plugboard`). */
  readonly schema: string
  /** Most connections of this host's pool (default 10, at least 2). */
  readonly poolMax: number
}

/** The shared Redis of a deployment of several hosts. */
export interface RedisConfig {
  /** `redis://[:password@]host:port[/db]` or `rediss://`. */
  readonly url: string
  /** Prefix of every key and channel (default `plugboard:`). */
  readonly prefix: string
}

/** The oracle's Matrix account for state replication. */
export interface MatrixConfig {
  readonly baseUrl: string
  readonly userId: string
  readonly accessToken: string
}

/** One row of the variable table (for `--help` and the README). */
export interface VariableDoc {
  readonly name: string
  readonly default: string
  readonly meaning: string
}

/** Every variable the server reads, with its default and meaning. */
export const VARIABLES: ReadonlyArray<VariableDoc> = [
  { name: "PORT", default: "3000", meaning: "TCP port to listen on (0 = any free port)" },
  { name: "HOST", default: "127.0.0.1", meaning: "Interface to listen on; 0.0.0.0 to accept remote clients" },
  { name: "PLUGBOARD_DATA_DIR", default: "./.plugboard", meaning: "Root of the server's local data" },
  {
    name: "SQLITE_DATABASE_PATH",
    default: "<data>/users",
    meaning: "Directory of the per-user SQLite databases (sessions + checkpoints)"
  },
  {
    name: "SQLITE_MAX_OPEN",
    default: "64",
    meaning: "Most per-user databases open at once (the least recently used idle one is closed)"
  },
  {
    name: "SQLITE_KEEP_CHECKPOINTS",
    default: "100",
    meaning: "Newest checkpoints kept per thread (the conversation itself is never pruned); 0 keeps all"
  },
  {
    name: "CREDITS_DATABASE_PATH",
    default: "<data>/credits.sqlite",
    meaning:
      "SQLite credit ledger file (unused with `DATABASE_URL`: the ledger is then Postgres's, for the server and `plugboard credits` alike)"
  },
  {
    name: "ORACLE_KEY_FILE",
    default: "<data>/oracle.key",
    meaning: "Oracle's Ed25519 key (ucanto text); generated on first boot, its DID is the UCAN audience"
  },
  {
    name: "USER_KEY_FILE",
    default: "<data>/user.key",
    meaning: "Local user's key used by `plugboard token` and `chat`; generated on first use"
  },
  {
    name: "ORACLE_NAME",
    default: "plugboard",
    meaning: "Oracle name shown by /health and stored on sessions"
  },
  { name: "UCAN_RESOURCE", default: "ixo:oracle", meaning: "Resource of the required `*` capability" },
  {
    name: "UCAN_GRANT_ISSUERS",
    default: "unset (the oracle alone)",
    meaning:
      "Comma-separated DIDs that, besides the oracle, may grant the capabilities plugins `require` (a user's token must prove them from one)"
  },
  {
    name: "UCAN_REPLAY",
    default: "reuse",
    meaning:
      "reuse: a token authenticates every request it comes with while valid (QiForge's client sends one invocation until it nearly expires); once: each invocation authenticates one request, on every host (on Redis with REDIS_URL), a replay is a 401 and a bare delegation is refused"
  },
  {
    name: "THROTTLE_LIMIT",
    default: "120",
    meaning:
      "Requests (and Socket.IO handshakes) per user per window; the default lets a person try the server and console freely, lower it for a public deployment"
  },
  { name: "THROTTLE_TTL_MS", default: "60000", meaning: "Rate-limit window in milliseconds (sliding)" },
  {
    name: "DISABLE_CREDITS",
    default: "false",
    meaning: "true: never answer 402 (credits are only checked when the `credits` plugin is loaded)"
  },
  {
    name: "CREDIT_RESERVE_ESTIMATE",
    default: "1",
    meaning:
      "Credits a turn reserves before it runs (402 when the balance not already reserved is below it); the turn's actual cost is settled at its end and the rest released"
  },
  {
    name: "LOG_LEVEL",
    default: "info",
    meaning: "Least severe log record written: debug, info (one line per request), warn or error"
  },
  {
    name: "LOG_FORMAT",
    default: "text",
    meaning: "text (`[level] message {fields}`) or json (one object per line: time, level, msg, fields)"
  },
  {
    name: "SSE_HEARTBEAT_MS",
    default: "15000",
    meaning: "Interval of `: heartbeat` comments on SSE streams"
  },
  {
    name: "SHUTDOWN_DEADLINE_MS",
    default: "10000",
    meaning:
      "On SIGTERM/SIGINT: how long running turns may finish before they are aborted; the Matrix flush that follows gets as long again"
  },
  {
    name: "CLIENT_TOOL_TIMEOUT_MS",
    default: "60000",
    meaning:
      "How long a browser tool / AG-UI action call waits for the client's Socket.IO answer (then the model is told it timed out)"
  },
  { name: "MAX_BODY_BYTES", default: "1048576", meaning: "Largest request body accepted (413 above)" },
  {
    name: "REQUEST_TIMEOUT_MS",
    default: "30000",
    meaning:
      "How long a client may take to send a whole request (headers and body); a slower one is answered 408 and its socket closed. Streamed answers are not bounded by it"
  },
  {
    name: "CORS_ORIGIN",
    default: "*",
    meaning: "Origin browser clients may call from (`*`, or one origin with credentials)"
  },
  {
    name: "CONSOLE",
    default: "on loopback",
    meaning:
      "The dev console at /console: true or false; unset, on only when the server listens on a loopback address (127.0.0.1, ::1, localhost)"
  },
  {
    name: "LLM_PROVIDER",
    default: "scripted",
    meaning: "openai | anthropic | ollama | openai-compatible | scripted (offline router)"
  },
  { name: "LLM_MODEL", default: "per provider", meaning: "Model name" },
  { name: "LLM_TEMPERATURE", default: "provider's", meaning: "0..2" },
  { name: "OPENAI_API_KEY / OPENAI_BASE_URL", default: "—", meaning: "openai, openai-compatible" },
  { name: "ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL", default: "—", meaning: "anthropic" },
  { name: "OLLAMA_BASE_URL", default: "http://127.0.0.1:11434", meaning: "ollama" },
  {
    name: "LLM_CONNECT_TIMEOUT_MS",
    default: String(DEFAULT_CALL_BOUNDS.connectTimeoutMs),
    meaning: "A model call with no first chunk from the provider this long is aborted"
  },
  {
    name: "LLM_FIRST_TOKEN_TIMEOUT_MS",
    default: String(DEFAULT_CALL_BOUNDS.firstTokenTimeoutMs),
    meaning:
      "A model call with no first token (text, tool call or reasoning) this long after it began is aborted"
  },
  {
    name: "LLM_IDLE_TIMEOUT_MS",
    default: String(DEFAULT_CALL_BOUNDS.idleTimeoutMs),
    meaning: "A model's streamed answer silent this long between two chunks is aborted"
  },
  {
    name: "TURN_MAX_MODEL_CALLS",
    default: String(TurnBounds.DEFAULT_LIMITS.maxModelCalls),
    meaning: "Most model calls in one turn (the turn ends, reason max-model-calls)"
  },
  {
    name: "TURN_MAX_TOOL_CALLS",
    default: String(TurnBounds.DEFAULT_LIMITS.maxToolCalls),
    meaning: "Most tool calls in one turn (the turn ends, reason max-tool-calls)"
  },
  {
    name: "TURN_MAX_TOKENS",
    default: String(TurnBounds.DEFAULT_LIMITS.maxTokens),
    meaning:
      "Most tokens in one turn: each model call counts the larger of the provider's usage report and the count of what it sent (tool schemas included) and answered; no model call starts past it (reason max-tokens)"
  },
  {
    name: "LOAD_BUDGET_TOKENS",
    default: String(TokenBudget.DEFAULT_LOAD_BUDGET_TOKENS),
    meaning:
      "Most tokens loading one plugin may add to every later model call (its tools' schemas, prompt and guide); a plugin over it is listed as unavailable, never loaded, with a boot warning and in inspect"
  },
  {
    name: "TOOL_RESULT_MAX_CHARS",
    default: String(ResultPages.DEFAULT_MAX_CHARS),
    meaning:
      "Characters of a tool's answer that enter the conversation whole; a longer answer is cut to its first page, the whole kept with the thread, and the model reads the rest with read_result"
  },
  {
    name: "TURN_TIMEOUT_MS",
    default: String(TurnBounds.DEFAULT_LIMITS.wallClockMs),
    meaning: "Longest a turn runs; no model or tool call starts past it (reason wall-clock)"
  },
  {
    name: "TURN_REPEAT_LIMIT",
    default: String(TurnBounds.DEFAULT_LIMITS.repeatLimit),
    meaning:
      "The same tool with the same arguments this many times in a turn: the model is told instead; once more ends the turn (reason repetition)"
  },
  {
    name: "APPROVAL_TOOLS",
    default: "unset (only tools defined with requiresApproval)",
    meaning:
      "Tools that wait for their user's approval before they run, besides those whose definition asks for it (docs/waiting.md): `<plugin>` for all its tools or `<plugin>/<tool>`, separated by commas"
  },
  {
    name: "APPROVAL_MCP_DESTRUCTIVE",
    default: "on",
    meaning:
      "on: an MCP tool whose annotations say destructiveHint: true waits for its user's approval (docs/waiting.md); off: the hint is ignored (APPROVAL_TOOLS still applies)"
  },
  {
    name: "WAIT_TIMEOUT_MS",
    default: "600000",
    meaning:
      "How long a run waits for its user's answer (an approval); then the host answers it timed-out and the model is told the tool did not run"
  },
  {
    name: "CONNECT_WAITS",
    default: "off",
    meaning:
      "on: a streamed turn that loads a plugin its user has not connected waits for the connection (a connect wait, resumed once the user connects; docs/waiting.md#connect-waits); off: the load answers the model with the link. Turn it on when your front ends render waiting frames"
  },
  {
    name: "PRELOAD",
    default: "shadow",
    meaning:
      "Predictive preload: off; shadow (rank the plugins against each turn's message and log whether the model then loads the predicted one); on (also offer a confidently predicted plugin's tools for that turn)"
  },
  {
    name: "CODE_MODE",
    default: "off",
    meaning:
      "Code mode: on offers run_code, which runs a program the model writes over the offered tools in a QuickJS sandbox (each call gated as a direct one, bounded in CPU, memory, output, calls and time); off offers nothing more"
  },
  {
    name: "MATRIX_BASE_URL / MATRIX_USER_ID / MATRIX_ACCESS_TOKEN",
    default: "unset (sync disabled)",
    meaning: "The oracle's Matrix account: per-user state replicated to Matrix when all three are set"
  },
  {
    name: "MATRIX_RECHECK_AFTER_MS",
    default: "300000",
    meaning:
      "How long a user's restore from Matrix holds while their database is on disk (0 = ask the homeserver on every request)"
  },
  {
    name: "MATRIX_REQUEST_TIMEOUT_MS",
    default: "10000",
    meaning:
      "Matrix request timeout; also the longest a request waits for a restore (then it is served locally)"
  },
  {
    name: "MCP_CONFIG",
    default: "unset",
    meaning: 'MCP servers to mount as plugins: a JSON file `{"mcpServers": {...}}` (same as `serve --mcp`)'
  },
  {
    name: "MCP_CACHE_DIR",
    default: "<data>/mcp-cache",
    meaning: "Cached tool lists of MCP servers (a restart or inspect spawns no cached server)"
  },
  { name: "MCP_IDLE_MS", default: "300000", meaning: "An MCP connection unused this long is closed" },
  {
    name: "CONNECTIONS_KEY",
    default: "unset (no OAuth connections kept)",
    meaning:
      "Key sealing users' OAuth connections to remote MCP servers at rest (AES-256-GCM, docs/oauth.md): 32 random bytes as 64 hex digits or base64 (`openssl rand -base64 32`); to change it, move the old key to CONNECTIONS_KEY_PREVIOUS, else every user connects again"
  },
  {
    name: "CONNECTIONS_KEY_PREVIOUS",
    default: "unset (no key rotation under way)",
    meaning:
      "Earlier CONNECTIONS_KEY values, comma-separated, during a key rotation: connections sealed under them still open, and are sealed again under CONNECTIONS_KEY when read or written (docs/oauth.md#at-rest)"
  },
  {
    name: "PUBLIC_URL",
    default: "http://<HOST>:<PORT>",
    meaning:
      "The host's address as users' browsers reach it (behind a proxy: its https URL); OAuth sends them back to `<PUBLIC_URL>/oauth/callback` (docs/oauth.md)"
  },
  {
    name: "SKILLS_DIR",
    default: "unset",
    meaning: "A folder of Agent Skills to mount as plugins (same as `serve --skills`)"
  },
  {
    name: "SKILLS_RUN",
    default: "unset (none)",
    meaning:
      "Skills whose scripts the agent may run, in bubblewrap (docs/skills-that-run.md): `all`, or skill names separated by commas; without a working bwrap the server boots with a warning and no skill runs"
  },
  {
    name: "SKILLS_RUN_BWRAP",
    default: "the bwrap on PATH",
    meaning: "The bubblewrap program skills' scripts run in (Debian/Ubuntu: apt-get install bubblewrap)"
  },
  {
    name: "SKILLS_RUN_PYTHON",
    default: "python3",
    meaning:
      "The Python that runs a skill's `.py` scripts (a venv's bin/python: the venv is mounted read-only)"
  },
  {
    name: "SKILLS_RUN_NODE",
    default: "the Node running the server",
    meaning: "The Node that runs a skill's `.js` scripts (its install is mounted read-only)"
  },
  {
    name: "SKILLS_RUN_HOSTS",
    default: "unset (no network)",
    meaning:
      "Hosts skills' scripts may reach over HTTP(S), through a proxy the host runs for each run (docs/skills-that-run.md): `host` or `host:port`, `*.example.com` for subdomains, separated by commas; tools that ignore HTTP_PROXY get no network"
  },
  {
    name: "EMBEDDING_MODEL",
    default: "unset (lexical ranking)",
    meaning:
      "Folder with model.onnx and vocab.txt (scripts/embedding-model.sh fetches all-MiniLM-L6-v2): the host's one ranking fuses the embedder's similarity with the lexical one: list_capabilities' query, predictive preload and `plugboard inspect --eval` (also `--embedding-model DIR`) all rank with it"
  },
  {
    name: "MANIFEST_OVERRIDES",
    default: "unset",
    meaning:
      "Operator manifest overrides: a JSON file or a JS/TS module (default export), plugin name → manifest fields merged over the plugin's"
  },
  {
    name: "HEALTH_PLUGINS_PUBLIC",
    default: "false",
    meaning: "`true`: `GET /health/plugins` (the boot report) answers without auth; otherwise it is behind it"
  },
  {
    name: "RUNS_DATABASE_PATH",
    default: "<data>/runs.sqlite",
    meaning: "SQLite file of the runs: each streamed turn's numbered frames (GET /runs/:id rejoins)"
  },
  {
    name: "RUN_RETENTION_MS",
    default: "3600000",
    meaning: "How long an ended run can still be rejoined (then it and its frames are pruned)"
  },
  {
    name: "DATABASE_URL",
    default: "unset (SQLite)",
    meaning:
      "postgres://user:password@host:port/db: checkpoints, sessions, credit ledger and runs in this shared Postgres (migrated at boot); Matrix sync is off"
  },
  {
    name: "DATABASE_SCHEMA",
    default: "plugboard",
    meaning: "Postgres schema of every table (lower-case identifier); with DATABASE_URL"
  },
  {
    name: "DATABASE_POOL_MAX",
    default: "10",
    meaning: "Most Postgres connections of this host (at least 2); with DATABASE_URL"
  },
  {
    name: "REDIS_URL",
    default: "unset (in process)",
    meaning:
      "redis://[:password@]host:port[/db]: rate limiter, turn lock, turn stops and run fan-out in this shared Redis"
  },
  {
    name: "REDIS_PREFIX",
    default: "plugboard:",
    meaning: "Prefix of every Redis key and channel; with REDIS_URL"
  },
  {
    name: "TURN_LOCK_TTL_MS",
    default: String(DEFAULT_TURN_LOCK_TTL_MS),
    meaning:
      "A dead host's hold on a session (and on its run) lapses this long after its last refresh: then the session's next turn runs and the run reads interrupted"
  }
]

/** The configuration is unusable: one message per bad variable. */
export class ConfigProblems extends Data.TaggedError("ConfigProblems")<{
  readonly problems: ReadonlyArray<string>
  readonly message: string
}> {
  constructor(problems: ReadonlyArray<string>) {
    super({ problems, message: problems.join("\n") })
  }
  /** What a host prints: one `[config-error] ...` line per problem. */
  get lines(): ReadonlyArray<string> {
    return this.problems.map((p) => `[config-error] ${p}`)
  }
}

/** A checked variable (or group): its value, or every problem found, one message each. */
type Check<A> = Effect.Effect<Either.Either<A, ReadonlyArray<string>>>

const bad = (message: string) => Either.left([message])

const raw = (name: string): Effect.Effect<string | undefined> =>
  Config.option(Config.string(name)).pipe(
    Effect.map((o) => {
      const v = Option.getOrUndefined(o)?.trim()
      return v === undefined || v === "" ? undefined : v
    }),
    // A ConfigProvider only fails here for a structurally odd source; treat it as unset.
    Effect.orElseSucceed(() => undefined)
  )

const integer = (name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): Check<number> =>
  Effect.map(raw(name), (v) => {
    if (v === undefined) return Either.right(fallback)
    const n = /^[+-]?\d+$/.test(v) ? Number(v) : Number.NaN
    return Number.isSafeInteger(n) && n >= min && n <= max
      ? Either.right(n)
      : bad(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}.`)
  })

const text = (name: string, fallback: string): Check<string> =>
  Effect.map(raw(name), (v) => Either.right(v ?? fallback))

/** A comma-separated list of DIDs; unset is none. */
const didList = (name: string): Check<ReadonlyArray<string>> =>
  Effect.map(raw(name), (v) => {
    if (v === undefined) return Either.right([])
    const dids = v
      .split(",")
      .map((d) => d.trim())
      .filter((d) => d.length > 0)
    const badDid = dids.find((d) => !Auth.isDid(d))
    return badDid === undefined
      ? Either.right(dids)
      : bad(`${name} must be comma-separated DIDs, got ${JSON.stringify(String(badDid).slice(0, 80))}.`)
  })

const boolean = (name: string, fallback: boolean): Check<boolean> =>
  Effect.map(raw(name), (v) => {
    if (v === undefined) return Either.right(fallback)
    const lower = v.toLowerCase()
    if (["true", "1", "yes", "on"].includes(lower)) return Either.right(true)
    if (["false", "0", "no", "off"].includes(lower)) return Either.right(false)
    return bad(`${name} must be true or false, got ${JSON.stringify(v)}.`)
  })

/** A boolean that may be left unset (`undefined`: the caller decides). */
const optionalBoolean = (name: string): Check<boolean | undefined> =>
  Effect.flatMap(
    raw(name),
    (v): Check<boolean | undefined> =>
      v === undefined ? Effect.succeed(Either.right(undefined)) : boolean(name, false)
  )

const choice = <A extends string>(name: string, values: ReadonlyArray<A>, fallback: A): Check<A> =>
  Effect.map(raw(name), (v) => {
    if (v === undefined) return Either.right(fallback)
    const lower = v.toLowerCase() as A
    return values.includes(lower)
      ? Either.right(lower)
      : bad(`${name} must be one of ${values.join(", ")}, got ${JSON.stringify(v.slice(0, 40))}.`)
  })

const path = (name: string, fallback: string, cwd: string): Check<string> =>
  Effect.map(raw(name), (v) => Either.right(v === undefined ? fallback : isAbsolute(v) ? v : resolve(cwd, v)))

const optionalPath = (name: string, cwd: string): Check<string | undefined> =>
  Effect.map(raw(name), (v) =>
    Either.right(v === undefined ? undefined : isAbsolute(v) ? v : resolve(cwd, v))
  )

// RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens, at most 63
// characters each and 253 in all (a trailing dot, the DNS root, is allowed).
const HOSTNAME_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i

/**
 * Whether `value` is something a server can listen on by name: an IPv4 or IPv6 literal (without
 * brackets) or a syntactically valid host name such as `localhost`. Whether it resolves to an
 * address of this machine is only known when listening.
 */
export const isListenHost = (value: string): boolean => {
  if (isIP(value) !== 0) return true
  const name = value.endsWith(".") ? value.slice(0, -1) : value
  // All digits and dots is a mistyped IPv4 address (no top-level domain is numeric).
  if (/^[\d.]+$/.test(name)) return false
  return name.length > 0 && name.length <= 253 && name.split(".").every((label) => HOSTNAME_LABEL.test(label))
}

/** `PUBLIC_URL`: an absolute http(s) URL without query or fragment, kept without a trailing slash. */
const publicUrl: Check<string | undefined> = Effect.map(raw("PUBLIC_URL"), (v) => {
  if (v === undefined || v.trim() === "") return Either.right(undefined)
  let parsed: URL
  try {
    parsed = new URL(v.trim())
  } catch {
    return bad(
      `PUBLIC_URL must be an absolute URL such as https://oracle.example.com, got ${JSON.stringify(v.slice(0, 80))}.`
    )
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return bad(`PUBLIC_URL must be an http or https URL, got ${JSON.stringify(parsed.protocol)}.`)
  if (parsed.search !== "" || parsed.hash !== "" || parsed.username !== "" || parsed.password !== "")
    return bad("PUBLIC_URL must have no query, fragment or credentials.")
  return Either.right(`${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`)
})

const host: Check<string> = Effect.map(raw("HOST"), (v) => {
  if (v === undefined) return Either.right("127.0.0.1")
  if (isListenHost(v)) return Either.right(v)
  const hint = /^\[.*\]$/.test(v) ? " (write an IPv6 address without brackets)" : ""
  return bad(
    `HOST must be an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1) or a host name (e.g. localhost), got ${JSON.stringify(v)}${hint}.`
  )
})

/**
 * `CORS_ORIGIN`: `*`, or exactly one origin, normalised to what a browser sends in `Origin`
 * (lower-case scheme and host, no default port, no trailing slash) so the header matches it.
 */
const corsOrigin: Check<string> = Effect.map(raw("CORS_ORIGIN"), (v) => {
  if (v === undefined || v === "*") return Either.right("*")
  const refuse = (why: string) =>
    bad(
      `CORS_ORIGIN must be * or one origin, scheme://host[:port] without a path (e.g. https://app.example.com), got ${JSON.stringify(v)}${why}.`
    )
  // The header carries one exact origin; a list or a wildcard pattern is what people try.
  if (/[,\s]/.test(v)) return refuse("; a list of origins is not accepted")
  if (v.includes("*")) return refuse("; wildcard patterns are not accepted (only * alone)")
  let parsed: URL
  try {
    parsed = new URL(v)
  } catch {
    return refuse("")
  }
  const hostless = parsed.host === ""
  const extra =
    parsed.username !== "" ||
    parsed.password !== "" ||
    parsed.search !== "" ||
    parsed.hash !== "" ||
    v.endsWith("?") ||
    v.endsWith("#") ||
    (parsed.pathname !== "" && parsed.pathname !== "/")
  if (hostless || extra || !v.includes("://")) return refuse("")
  return Either.right(`${parsed.protocol}//${parsed.host}`)
})

/** The URL with its password (if any) replaced by `***`: a bad value is echoed, its secret never. */
const hidePassword = (value: string): string => {
  try {
    const url = new URL(value)
    if (url.password !== "") url.password = "***"
    return url.toString()
  } catch {
    // Unparsable: anything between "://" and "@" may be a password.
    return value.replace(/\/\/[^@/]*@/, "//***@")
  }
}

const urlOf = (name: string, schemes: ReadonlyArray<string>, example: string) => (v: string) => {
  let parsed: URL | undefined
  try {
    parsed = new URL(v)
  } catch {
    parsed = undefined
  }
  return parsed !== undefined && schemes.includes(parsed.protocol) && parsed.hostname !== ""
    ? Either.right(v)
    : bad(`${name} must be a ${example} URL, got ${JSON.stringify(hidePassword(v))}.`)
}

// As LangGraph's Postgres saver puts the schema in SQL unescaped, only plain identifiers.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * The shared Postgres: `DATABASE_URL`, with `DATABASE_SCHEMA` and `DATABASE_POOL_MAX` (the
 * variables the Postgres adapter's `layerDatabaseConfig` reads). The two others without the URL
 * are a mistake worth a line: the operator meant to share state and would not.
 */
const database: Check<DatabaseConfig | undefined> = Effect.map(
  Effect.all([
    raw("DATABASE_URL"),
    raw("DATABASE_SCHEMA"),
    raw("DATABASE_POOL_MAX"),
    integer("DATABASE_POOL_MAX", 10, 2, 10_000)
  ]),
  ([url, schema, poolMaxSet, poolMax]) => {
    const problems: Array<string> = Either.isLeft(poolMax) ? [...poolMax.left] : []
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
      problems.push(
        `DATABASE_SCHEMA must be a lower-case identifier (a-z, 0-9, _; at most 63 characters, not starting with a digit), got ${JSON.stringify(schema)}.`
      )
    }
    if (url === undefined) {
      const stray = [
        ...(schema === undefined ? [] : ["DATABASE_SCHEMA"]),
        ...(poolMaxSet === undefined ? [] : ["DATABASE_POOL_MAX"])
      ]
      if (stray.length > 0)
        problems.push(`${stray.join(", ")} set without DATABASE_URL: set DATABASE_URL too (or unset them).`)
      return problems.length > 0 ? Either.left(problems) : Either.right(undefined)
    }
    const checked = urlOf(
      "DATABASE_URL",
      ["postgres:", "postgresql:"],
      "postgres://user:password@host:port/database"
    )(url)
    if (Either.isLeft(checked)) problems.push(...checked.left)
    return problems.length > 0
      ? Either.left(problems)
      : Either.right({ url, schema: schema ?? "plugboard", poolMax: Either.getOrElse(poolMax, () => 10) })
  }
)

/** The shared Redis: `REDIS_URL`, with `REDIS_PREFIX` (as the Redis adapter's `layerConnectionConfig`). */
const redis: Check<RedisConfig | undefined> = Effect.map(
  Effect.all([raw("REDIS_URL"), raw("REDIS_PREFIX")]),
  ([url, prefix]) => {
    const problems: Array<string> = []
    if (prefix !== undefined && !/^[\x21-\x7e]{1,200}$/.test(prefix)) {
      problems.push(
        `REDIS_PREFIX must be at most 200 printable ASCII characters without spaces, got ${JSON.stringify(prefix)}.`
      )
    }
    if (url === undefined) {
      if (prefix !== undefined)
        problems.push("REDIS_PREFIX set without REDIS_URL: set REDIS_URL too (or unset it).")
      return problems.length > 0 ? Either.left(problems) : Either.right(undefined)
    }
    const checked = urlOf("REDIS_URL", ["redis:", "rediss:"], "redis://[:password@]host:port[/db]")(url)
    if (Either.isLeft(checked)) problems.push(...checked.left)
    return problems.length > 0 ? Either.left(problems) : Either.right({ url, prefix: prefix ?? "plugboard:" })
  }
)

const MATRIX_VARIABLES = ["MATRIX_BASE_URL", "MATRIX_USER_ID", "MATRIX_ACCESS_TOKEN"] as const

/**
 * The Matrix account: all three variables or none. Every problem is reported at once: the
 * missing ones (one line, the rule), and each one that is set but malformed.
 */
const matrix: Check<MatrixConfig | undefined> = Effect.map(
  Effect.all(MATRIX_VARIABLES.map(raw)),
  ([baseUrl, userId, accessToken]) => {
    const values = [baseUrl, userId, accessToken]
    const missing = MATRIX_VARIABLES.filter((_, i) => values[i] === undefined)
    if (missing.length === 3) return Either.right(undefined)
    const problems: Array<string> = []
    if (missing.length > 0) {
      problems.push(
        `${missing.join(", ")} must be set too: Matrix sync needs MATRIX_BASE_URL, MATRIX_USER_ID and MATRIX_ACCESS_TOKEN together (or none, to disable it).`
      )
    }
    if (baseUrl !== undefined && !isHttpUrl(baseUrl)) {
      problems.push(`MATRIX_BASE_URL must be an http(s) URL, got ${JSON.stringify(baseUrl)}.`)
    }
    if (userId !== undefined && !/^@[^:\s]+:\S+$/.test(userId)) {
      problems.push(`MATRIX_USER_ID must look like @name:server, got ${JSON.stringify(userId)}.`)
    }
    // It is sent in an Authorization header: a space or control character would break it.
    if (accessToken !== undefined && !/^[\x21-\x7e]+$/.test(accessToken)) {
      problems.push(
        "MATRIX_ACCESS_TOKEN must be one token of printable ASCII characters without spaces (its value is not shown)."
      )
    }
    return problems.length > 0
      ? Either.left(problems)
      : Either.right({ baseUrl: baseUrl!, userId: userId!, accessToken: accessToken! })
  }
)

const isHttpUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

const model: Check<ChatModelSettings> = Effect.map(
  Effect.orElseSucceed(envConfig, () => ({})),
  (env) => Either.mapLeft(resolveSettings(env), (problems) => problems.map((p) => p.message))
)

/**
 * Reads and checks the configuration from the current `ConfigProvider`; `cwd` anchors relative
 * paths. Fails with every problem found.
 */
export const load = (cwd: string = process.cwd()): Effect.Effect<ServerConfig, ConfigProblems> =>
  Effect.gen(function* () {
    const dataDirE = yield* path("PLUGBOARD_DATA_DIR", resolve(cwd, ".plugboard"), cwd)
    const dataDir = Either.getOrElse(dataDirE, () => resolve(cwd, ".plugboard"))
    const checks = {
      port: integer("PORT", 3000, 0, 65535),
      host,
      dataDir: Effect.succeed(dataDirE),
      sqliteDatabasePath: path("SQLITE_DATABASE_PATH", join(dataDir, "users"), cwd),
      sqliteMaxOpen: integer("SQLITE_MAX_OPEN", 64, 1, 100_000),
      sqliteKeepCheckpoints: integer("SQLITE_KEEP_CHECKPOINTS", 100, 0),
      creditsDatabasePath: path("CREDITS_DATABASE_PATH", join(dataDir, "credits.sqlite"), cwd),
      oracleKeyFile: path("ORACLE_KEY_FILE", join(dataDir, "oracle.key"), cwd),
      userKeyFile: path("USER_KEY_FILE", join(dataDir, "user.key"), cwd),
      oracleName: text("ORACLE_NAME", "plugboard"),
      ucanResource: text("UCAN_RESOURCE", "ixo:oracle"),
      ucanGrantIssuers: didList("UCAN_GRANT_ISSUERS"),
      ucanReplay: choice("UCAN_REPLAY", ["reuse", "once"] as const, "reuse"),
      throttleLimit: integer("THROTTLE_LIMIT", 120, 1),
      throttleTtlMs: integer("THROTTLE_TTL_MS", 60_000, 1),
      disableCredits: boolean("DISABLE_CREDITS", false),
      creditReserveEstimate: integer("CREDIT_RESERVE_ESTIMATE", 1, 1),
      logLevel: choice("LOG_LEVEL", ["debug", "info", "warn", "error"] as const, "info"),
      logFormat: choice("LOG_FORMAT", ["text", "json"] as const, "text"),
      heartbeatMs: integer("SSE_HEARTBEAT_MS", 15_000, 10),
      shutdownDeadlineMs: integer("SHUTDOWN_DEADLINE_MS", 10_000, 0),
      clientToolTimeoutMs: integer("CLIENT_TOOL_TIMEOUT_MS", 60_000, 10, 3_600_000),
      maxBodyBytes: integer("MAX_BODY_BYTES", 1024 * 1024, 1024),
      requestTimeoutMs: integer("REQUEST_TIMEOUT_MS", 30_000, 100, 3_600_000),
      corsOrigin,
      console: optionalBoolean("CONSOLE"),
      model,
      llmConnectTimeoutMs: integer(
        "LLM_CONNECT_TIMEOUT_MS",
        DEFAULT_CALL_BOUNDS.connectTimeoutMs,
        1,
        3_600_000
      ),
      llmFirstTokenTimeoutMs: integer(
        "LLM_FIRST_TOKEN_TIMEOUT_MS",
        DEFAULT_CALL_BOUNDS.firstTokenTimeoutMs,
        1,
        3_600_000
      ),
      llmIdleTimeoutMs: integer("LLM_IDLE_TIMEOUT_MS", DEFAULT_CALL_BOUNDS.idleTimeoutMs, 1, 3_600_000),
      turnMaxModelCalls: integer("TURN_MAX_MODEL_CALLS", TurnBounds.DEFAULT_LIMITS.maxModelCalls, 1),
      turnMaxToolCalls: integer("TURN_MAX_TOOL_CALLS", TurnBounds.DEFAULT_LIMITS.maxToolCalls, 1),
      turnMaxTokens: integer("TURN_MAX_TOKENS", TurnBounds.DEFAULT_LIMITS.maxTokens, 1),
      turnTimeoutMs: integer("TURN_TIMEOUT_MS", TurnBounds.DEFAULT_LIMITS.wallClockMs, 1),
      turnRepeatLimit: integer("TURN_REPEAT_LIMIT", TurnBounds.DEFAULT_LIMITS.repeatLimit, 2),
      approvalTools: Effect.zipWith(
        Effect.map(raw("APPROVAL_TOOLS"), (v) =>
          v === undefined
            ? Either.right(Approval.NONE)
            : Either.mapLeft(Approval.parseOperatorList(v), (m) => [`APPROVAL_TOOLS: ${m}.`])
        ),
        boolean("APPROVAL_MCP_DESTRUCTIVE", true),
        (list, destructive) =>
          Either.isLeft(list)
            ? Either.isLeft(destructive)
              ? Either.left([...list.left, ...destructive.left])
              : list
            : Either.map(destructive, (d): Approval.OperatorList => ({ ...list.right, destructive: d }))
      ),
      waitTimeoutMs: integer("WAIT_TIMEOUT_MS", 600_000, 1, 2_592_000_000),
      connectWaits: boolean("CONNECT_WAITS", false),
      loadBudgetTokens: integer("LOAD_BUDGET_TOKENS", TokenBudget.DEFAULT_LOAD_BUDGET_TOKENS, 1),
      toolResultMaxChars: integer(
        "TOOL_RESULT_MAX_CHARS",
        ResultPages.DEFAULT_MAX_CHARS,
        ResultPages.MIN_MAX_CHARS
      ),
      preload: choice("PRELOAD", Preload.modes, "shadow"),
      codeMode: choice("CODE_MODE", CodeMode.settings, "off"),
      matrix,
      matrixRecheckAfterMs: integer("MATRIX_RECHECK_AFTER_MS", 300_000, 0),
      matrixRequestTimeoutMs: integer("MATRIX_REQUEST_TIMEOUT_MS", 10_000, 1, 600_000),
      mcpConfigFile: optionalPath("MCP_CONFIG", cwd),
      mcpCacheDir: path("MCP_CACHE_DIR", join(dataDir, "mcp-cache"), cwd),
      mcpIdleMs: integer("MCP_IDLE_MS", 300_000, 1),
      connectionsCipher: Effect.map(
        Effect.all([raw("CONNECTIONS_KEY"), raw("CONNECTIONS_KEY_PREVIOUS")]),
        ([current, previous]) =>
          current === undefined
            ? previous === undefined
              ? Either.right(undefined)
              : Either.left([
                  "CONNECTIONS_KEY_PREVIOUS is set but CONNECTIONS_KEY is not: set CONNECTIONS_KEY to the current key (docs/oauth.md#at-rest)"
                ])
            : Either.mapLeft(ConnectionsCipher.fromKeyTexts(current, previous), (m) => [...m])
      ),
      publicUrl,
      skillsDir: optionalPath("SKILLS_DIR", cwd),
      skillsRun: Effect.map(Effect.all(SKILLS_RUN_VARIABLES.map(raw)), (values) =>
        Either.mapLeft(
          skillsRunFromEnv(Object.fromEntries(SKILLS_RUN_VARIABLES.map((name, i) => [name, values[i]])), cwd),
          (m) => [m]
        )
      ),
      embeddingModel: optionalPath("EMBEDDING_MODEL", cwd),
      manifestOverridesFile: optionalPath("MANIFEST_OVERRIDES", cwd),
      healthPluginsPublic: boolean("HEALTH_PLUGINS_PUBLIC", false),
      runsDatabasePath: path("RUNS_DATABASE_PATH", join(dataDir, "runs.sqlite"), cwd),
      runRetentionMs: integer("RUN_RETENTION_MS", 3_600_000, 1),
      database,
      redis,
      turnLockTtlMs: integer("TURN_LOCK_TTL_MS", DEFAULT_TURN_LOCK_TTL_MS, 100, 3_600_000)
    }
    const results = yield* Effect.all(checks)
    const problems = (Object.values(results) as Array<Either.Either<unknown, ReadonlyArray<string>>>).flatMap(
      (r) => (Either.isLeft(r) ? r.left : [])
    )
    if (problems.length > 0) return yield* Effect.fail(new ConfigProblems(problems))
    return Object.fromEntries(
      Object.entries(results).map(([k, r]) => [k, (r as Either.Right<never, unknown>).right])
    ) as unknown as ServerConfig
  })

/** `load` against an explicit environment map (tests, spawned servers, the CLI). */
export const fromEnv = (
  env: Readonly<Record<string, string | undefined>>,
  cwd: string = process.cwd()
): Effect.Effect<ServerConfig, ConfigProblems> => {
  const map = new Map<string, string>()
  for (const [k, v] of Object.entries(env)) if (v !== undefined) map.set(k, v)
  return Effect.withConfigProvider(load(cwd), ConfigProvider.fromMap(map))
}
