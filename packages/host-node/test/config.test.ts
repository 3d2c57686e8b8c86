/**
 * Configuration at boot: every bad variable is reported at once, one `[config-error]` line each
 * (model provider, Matrix, HOST, CORS_ORIGIN), and nothing boots; a server that cannot listen
 * says which of PORT / HOST to change, in one line, and `plugboard serve` exits non-zero.
 */

import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { TurnBounds } from "@plugboard/core"
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { fromEnv, isListenHost, type ServerConfig } from "../src/Config.js"
import { type CliIO, ListenError, serve } from "../src/cli/Commands.js"
import { bootLines, spawnServe, weather } from "./helpers.js"

const here = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(here, "../../..")

/** The checked configuration of `env`, or its `[config-error]` lines. */
const check = (env: Record<string, string>): Either.Either<ServerConfig, ReadonlyArray<string>> =>
  Either.mapLeft(Effect.runSync(Effect.either(fromEnv(env, "/srv"))), (e) => e.lines)
const linesOf = (env: Record<string, string>) =>
  Either.match(check(env), {
    onLeft: (lines) => lines,
    onRight: () => []
  })
const configOf = (env: Record<string, string>) =>
  Either.getOrThrowWith(check(env), (lines) => new Error(lines.join("\n")))

/** Boots with `env` and expects exactly `expected` (in order), i.e. nothing boots. */
const expectBootRefused = async (env: Record<string, string>, expected: ReadonlyArray<RegExp>) => {
  const lines = await bootLines([weather], env)
  expect(lines).toEqual(expected.map((re) => expect.stringMatching(re)))
}

describe("model provider variables", () => {
  it("the temperature, the missing key and the malformed URL at once (openai)", async () => {
    await expectBootRefused({ LLM_PROVIDER: "openai", LLM_TEMPERATURE: "9", OPENAI_BASE_URL: "notaurl" }, [
      /^\[config-error\] LLM_TEMPERATURE must be a number between 0 and 2, got "9"\.$/,
      /^\[config-error\] OPENAI_API_KEY is required when LLM_PROVIDER=openai /,
      /^\[config-error\] OPENAI_BASE_URL must be an http\(s\) URL, got "notaurl"\.$/
    ])
  })

  it("every provider reports each of its variables", () => {
    expect(linesOf({ LLM_PROVIDER: "anthropic", LLM_TEMPERATURE: "x", ANTHROPIC_BASE_URL: "nope" })).toEqual([
      expect.stringMatching(/^\[config-error\] LLM_TEMPERATURE must be/),
      expect.stringMatching(/^\[config-error\] ANTHROPIC_API_KEY is required/),
      expect.stringMatching(/^\[config-error\] ANTHROPIC_BASE_URL must be/)
    ])
    expect(linesOf({ LLM_PROVIDER: "ollama", LLM_TEMPERATURE: "3", OLLAMA_BASE_URL: "box:11434" })).toEqual([
      expect.stringMatching(/^\[config-error\] LLM_TEMPERATURE must be/),
      expect.stringMatching(/^\[config-error\] OLLAMA_BASE_URL must be/)
    ])
    expect(linesOf({ LLM_PROVIDER: "openai-compatible", LLM_TEMPERATURE: "-0.5" })).toEqual([
      expect.stringMatching(/^\[config-error\] LLM_TEMPERATURE must be/),
      expect.stringMatching(/^\[config-error\] OPENAI_BASE_URL is required/),
      expect.stringMatching(/^\[config-error\] LLM_MODEL is required/)
    ])
    expect(linesOf({ LLM_PROVIDER: "scripted", LLM_TEMPERATURE: "hot" })).toEqual([
      expect.stringMatching(/^\[config-error\] LLM_TEMPERATURE must be/)
    ])
    expect(linesOf({ LLM_PROVIDER: "skynet", LLM_TEMPERATURE: "hot" })).toEqual([
      expect.stringMatching(/^\[config-error\] LLM_PROVIDER="skynet" is not a provider/),
      expect.stringMatching(/^\[config-error\] LLM_TEMPERATURE must be/)
    ])
  })
})

describe("model call bounds", () => {
  it("default to the adapter's, are read in milliseconds, and a malformed one is named", () => {
    const defaults = configOf({})
    expect([
      defaults.llmConnectTimeoutMs,
      defaults.llmFirstTokenTimeoutMs,
      defaults.llmIdleTimeoutMs
    ]).toEqual([30_000, 120_000, 60_000])
    const set = configOf({
      LLM_CONNECT_TIMEOUT_MS: "5000",
      LLM_FIRST_TOKEN_TIMEOUT_MS: "45000",
      LLM_IDLE_TIMEOUT_MS: "20000"
    })
    expect([set.llmConnectTimeoutMs, set.llmFirstTokenTimeoutMs, set.llmIdleTimeoutMs]).toEqual([
      5_000, 45_000, 20_000
    ])
    expect(
      linesOf({ LLM_CONNECT_TIMEOUT_MS: "0", LLM_FIRST_TOKEN_TIMEOUT_MS: "soon", LLM_IDLE_TIMEOUT_MS: "-1" })
    ).toEqual([
      expect.stringMatching(/^\[config-error\] LLM_CONNECT_TIMEOUT_MS /),
      expect.stringMatching(/^\[config-error\] LLM_FIRST_TOKEN_TIMEOUT_MS /),
      expect.stringMatching(/^\[config-error\] LLM_IDLE_TIMEOUT_MS /)
    ])
  })
})

describe("turn bounds", () => {
  it("default to core's, are read as integers, and a malformed one is named", () => {
    const defaults = configOf({})
    expect({
      maxModelCalls: defaults.turnMaxModelCalls,
      maxToolCalls: defaults.turnMaxToolCalls,
      maxTokens: defaults.turnMaxTokens,
      wallClockMs: defaults.turnTimeoutMs,
      repeatLimit: defaults.turnRepeatLimit
    }).toEqual(TurnBounds.DEFAULT_LIMITS)
    const set = configOf({
      TURN_MAX_MODEL_CALLS: "4",
      TURN_MAX_TOOL_CALLS: "9",
      TURN_MAX_TOKENS: "1000",
      TURN_TIMEOUT_MS: "60000",
      TURN_REPEAT_LIMIT: "2"
    })
    expect([
      set.turnMaxModelCalls,
      set.turnMaxToolCalls,
      set.turnMaxTokens,
      set.turnTimeoutMs,
      set.turnRepeatLimit
    ]).toEqual([4, 9, 1000, 60_000, 2])
    expect(linesOf({ TURN_MAX_TOOL_CALLS: "0", TURN_REPEAT_LIMIT: "1", TURN_TIMEOUT_MS: "later" })).toEqual([
      expect.stringMatching(/^\[config-error\] TURN_MAX_TOOL_CALLS /),
      expect.stringMatching(/^\[config-error\] TURN_TIMEOUT_MS /),
      expect.stringMatching(/^\[config-error\] TURN_REPEAT_LIMIT /)
    ])
  })
})

describe("Matrix variables", () => {
  it("each malformed variable at once when all three are set", async () => {
    await expectBootRefused({ MATRIX_BASE_URL: "x", MATRIX_USER_ID: "bad", MATRIX_ACCESS_TOKEN: "t" }, [
      /^\[config-error\] MATRIX_BASE_URL must be an http\(s\) URL, got "x"\.$/,
      /^\[config-error\] MATRIX_USER_ID must look like @name:server, got "bad"\.$/
    ])
  })

  it("the all-three-or-none rule and the malformed ones together", () => {
    expect(linesOf({ MATRIX_BASE_URL: "x", MATRIX_USER_ID: "bad" })).toEqual([
      expect.stringMatching(
        /^\[config-error\] MATRIX_ACCESS_TOKEN must be set too: .*together \(or none, to disable it\)\.$/
      ),
      expect.stringMatching(/^\[config-error\] MATRIX_BASE_URL must be an http\(s\) URL/),
      expect.stringMatching(/^\[config-error\] MATRIX_USER_ID must look like @name:server/)
    ])
    expect(linesOf({ MATRIX_ACCESS_TOKEN: "tok en" })).toEqual([
      expect.stringMatching(/^\[config-error\] MATRIX_BASE_URL, MATRIX_USER_ID must be set too/),
      // The token's value is never printed.
      "[config-error] MATRIX_ACCESS_TOKEN must be one token of printable ASCII characters without spaces (its value is not shown)."
    ])
    expect(
      configOf({
        MATRIX_BASE_URL: "https://matrix.example",
        MATRIX_USER_ID: "@oracle:matrix.example",
        MATRIX_ACCESS_TOKEN: "syt_abc"
      }).matrix
    ).toEqual({
      baseUrl: "https://matrix.example",
      userId: "@oracle:matrix.example",
      accessToken: "syt_abc"
    })
  })
})

describe("HOST", () => {
  it("a malformed host is a config error naming HOST, and nothing boots", async () => {
    await expectBootRefused({ HOST: "not a host!" }, [
      /^\[config-error\] HOST must be an IP address \(e\.g\. 127\.0\.0\.1, 0\.0\.0\.0, ::1\) or a host name \(e\.g\. localhost\), got "not a host!"\.$/
    ])
    for (const bad of [
      "[::1]",
      "a..b",
      "-box",
      "box-",
      "under_score",
      "256.1.1.1",
      "1.2.3",
      `${"a".repeat(64)}.com`
    ]) {
      expect(linesOf({ HOST: bad })).toEqual([expect.stringMatching(/^\[config-error\] HOST must be/)])
    }
    expect(linesOf({ HOST: "[::1]" })[0]).toContain("without brackets")
  })

  it("IP literals and host names are accepted", () => {
    for (const good of [
      "127.0.0.1",
      "0.0.0.0",
      "::",
      "::1",
      "fe80::1",
      "localhost",
      "my-box.local",
      "Example.COM."
    ]) {
      expect(isListenHost(good)).toBe(true)
      expect(configOf({ HOST: good }).host).toBe(good)
    }
    expect(configOf({}).host).toBe("127.0.0.1")
  })
})

describe("CORS_ORIGIN", () => {
  it("a list, a path, a wildcard pattern or a bare host is refused, saying what is accepted", () => {
    const accepted =
      /^\[config-error\] CORS_ORIGIN must be \* or one origin, scheme:\/\/host\[:port\] without a path/
    expect(linesOf({ CORS_ORIGIN: "https://a.example,https://b.example" })).toEqual([
      expect.stringMatching(new RegExp(`${accepted.source}.*a list of origins is not accepted\\.$`))
    ])
    for (const bad of [
      "https://a.example https://b.example",
      "https://app.example/path",
      "https://app.example?x=1",
      "https://app.example#top",
      "https://user@app.example",
      "http://*.example.com",
      "app.example",
      "null",
      "file:///tmp"
    ]) {
      expect(linesOf({ CORS_ORIGIN: bad })).toEqual([expect.stringMatching(accepted)])
    }
  })

  it("* or one origin, normalised to what a browser sends in Origin", () => {
    expect(configOf({}).corsOrigin).toBe("*")
    expect(configOf({ CORS_ORIGIN: "*" }).corsOrigin).toBe("*")
    expect(configOf({ CORS_ORIGIN: "http://localhost:5173" }).corsOrigin).toBe("http://localhost:5173")
    expect(configOf({ CORS_ORIGIN: "HTTPS://App.Example:443/" }).corsOrigin).toBe("https://app.example")
    expect(configOf({ CORS_ORIGIN: "capacitor://localhost" }).corsOrigin).toBe("capacitor://localhost")
  })
})

it("every bad variable of every kind in one pass", async () => {
  const lines = await bootLines([weather], {
    LLM_PROVIDER: "openai",
    LLM_TEMPERATURE: "9",
    OPENAI_BASE_URL: "notaurl",
    MATRIX_BASE_URL: "x",
    MATRIX_USER_ID: "bad",
    MATRIX_ACCESS_TOKEN: "t",
    HOST: "not a host!",
    CORS_ORIGIN: "https://a.example,https://b.example",
    PORT: "eighty"
  })
  const names = [
    "PORT",
    "HOST",
    "CORS_ORIGIN",
    "LLM_TEMPERATURE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MATRIX_BASE_URL",
    "MATRIX_USER_ID"
  ]
  expect(lines).toHaveLength(names.length)
  for (const name of names) {
    expect(lines.filter((l) => l.startsWith(`[config-error] ${name} `))).toHaveLength(1)
  }
})

/** A TCP port held by another listener for the duration of `body`. */
const withBusyPort = async <A>(body: (port: number) => Promise<A>): Promise<A> => {
  const blocker: Server = createServer()
  await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r))
  const port = (blocker.address() as { port: number }).port
  try {
    return await body(port)
  } finally {
    await new Promise<void>((r) => blocker.close(() => r()))
  }
}

describe("listen failures (serve)", () => {
  const run = async (argv: ReadonlyArray<string>, env: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-listen-"))
    const io: CliIO = { out: () => {}, err: () => {}, env: { PLUGBOARD_DATA_DIR: dir, ...env }, cwd: ROOT }
    try {
      return await serve(argv, io).then(
        () => {
          throw new Error("serve should not have started")
        },
        (error: unknown) => error
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }

  it("a port in use, an unknown host name, an address not of this machine: one line naming what to change", async () => {
    await withBusyPort(async (port) => {
      const busy = await run([], { PORT: String(port) })
      expect(busy).toBeInstanceOf(ListenError)
      expect((busy as Error).message).toBe(
        `[boot-error] Cannot listen on 127.0.0.1:${port}: the port is already in use (EADDRINUSE); change PORT=${port} (0 = any free port) or stop the process using it.`
      )
      const flag = await run(["--port", String(port)], {})
      expect((flag as Error).message).toMatch(/EADDRINUSE\); change --port \d+ /)
    })
    const unknown = await run([], { PORT: "0", HOST: "no-such-host.invalid" })
    expect(unknown).toBeInstanceOf(ListenError)
    expect((unknown as Error).message).toMatch(
      /^\[boot-error\] Cannot listen on no-such-host\.invalid:0: the host name does not resolve \((ENOTFOUND|EAI_AGAIN)\); change HOST=no-such-host\.invalid to an address of this machine/
    )
    // 192.0.2.0/24 is reserved for documentation: never an address of this machine.
    const foreign = await run(["--host", "192.0.2.1"], { PORT: "0" })
    expect((foreign as Error).message).toMatch(
      /^\[boot-error\] Cannot listen on 192\.0\.2\.1:0: the address is not one of this machine's \(EADDRNOTAVAIL\); change --host 192\.0\.2\.1/
    )
  }, 60_000)

  it("a malformed --host is a usage error before anything opens", async () => {
    const error = await run(["--host", "not a host!"], {})
    expect((error as Error).message).toMatch(/^--host must be an IP address .* got "not a host!"\.$/)
  })
})

describe("plugboard serve (process)", () => {
  const spawnCli = (cwd: string, env: Record<string, string>) =>
    spawnServe(
      [
        join(ROOT, "node_modules/.bin/tsx"),
        "--conditions=@plugboard/source",
        join(ROOT, "packages/host-node/src/cli/main.ts"),
        "serve"
      ],
      cwd,
      env
    )

  it("a busy PORT: one line naming PORT, exit 1; a malformed HOST: its config error, exit 1", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "plugboard-serve-"))
    try {
      await withBusyPort(async (port) => {
        const busy = spawnCli(cwd, { PORT: String(port) })
        await expect(busy.url).rejects.toThrow()
        expect(await busy.exited).toBe(1)
        expect(busy.output().trim().split("\n")).toEqual([
          `[boot-error] Cannot listen on 127.0.0.1:${port}: the port is already in use (EADDRINUSE); change PORT=${port} (0 = any free port) or stop the process using it.`
        ])
      })
      const badHost = spawnCli(cwd, { PORT: "0", HOST: "not a host!" })
      await expect(badHost.url).rejects.toThrow()
      expect(await badHost.exited).toBe(1)
      expect(badHost.output().trim().split("\n")).toEqual([
        expect.stringMatching(/^\[config-error\] HOST must be an IP address .* got "not a host!"\.$/)
      ])
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  }, 150_000)
})

describe("log variables", () => {
  it("LOG_LEVEL and LOG_FORMAT take their values in any case; anything else is a config error naming them", () => {
    expect(configOf({ LOG_LEVEL: "WARN", LOG_FORMAT: "Json" })).toMatchObject({
      logLevel: "warn",
      logFormat: "json"
    })
    expect(configOf({})).toMatchObject({ logLevel: "info", logFormat: "text" })
    expect(linesOf({ LOG_LEVEL: "loud", LOG_FORMAT: "xml" })).toEqual([
      '[config-error] LOG_LEVEL must be one of debug, info, warn, error, got "loud".',
      '[config-error] LOG_FORMAT must be one of text, json, got "xml".'
    ])
  })
})
