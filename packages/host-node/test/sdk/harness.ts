/**
 * Drives a real plugboard server with the real QiForge client, `@ixo/oracles-client-sdk@1.4.0`:
 * its React hooks under jsdom (`renderHook`), talking over 127.0.0.1 to an app started as the other
 * host tests start it (`start()`, in a process of its own: server.ts), with UCAN tokens minted per
 * user. See README.md beside this file.
 *
 * Import from a test file that starts with `// @vitest-environment jsdom`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import {
  type IChatOptions,
  type IMessage,
  OraclesProvider,
  useChat,
  useOracleSessions
} from "@ixo/oracles-client-sdk"
import { QueryClient } from "@tanstack/react-query"
import { type RenderHookResult, renderHook, waitFor } from "@testing-library/react"
import { createElement, type ReactNode } from "react"
import { afterEach, beforeAll, beforeEach, expect } from "vitest"
import type { Pace } from "./model.js"

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = join(HERE, "../../../..")

/** A plugin the server process can run (see server.ts). */
export type PluginName = "weather" | "slow-job" | "credits"

/** The server process: its URL and DID, users whose tokens it mints, and its stop. */
export interface Oracle {
  readonly url: string
  readonly oracleDid: string
  /** A fresh Ed25519 user: the factories its `OraclesProvider` gets mint through the server process. */
  readonly newUser: () => Promise<SdkUser>
  /** Lets one held answer go on (a server started with `pace.holdAfter`). */
  readonly release: () => Promise<void>
  /** Adds `amount` credits to `did`'s balance through the host's credit API; the new balance. */
  readonly topUp: (did: string, amount: number) => Promise<number>
  /** `did`'s credit balance. */
  readonly balance: (did: string) => Promise<number>
  /**
   * The status of a GET of `path` as user `did` (fresh tokens), sent from the server's process:
   * a look at the server that neither the SDK nor the test's network sees.
   */
  readonly statusOf: (did: string, path: string) => Promise<number>
  readonly stop: () => Promise<void>
}

/** Options of the server process. */
export interface OracleOptions {
  /** Pace the router's answers (chunked, with pauses, held after `holdAfter` chunks): model.ts. */
  readonly pace?: Pace
  /** Added to the server's environment (e.g. `RUN_RETENTION_MS`). */
  readonly env?: Readonly<Record<string, string>>
}

/**
 * Starts the server (server.ts, through tsx) in a process of its own with `plugins`; resolves once
 * it listens. Its output is kept and shown when it fails to start.
 */
export const startOracle = async (
  plugins: ReadonlyArray<PluginName> = ["weather"],
  options: OracleOptions = {}
): Promise<Oracle> => {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "--conditions=@plugboard/source",
      join(HERE, "server.ts"),
      plugins.join(","),
      JSON.stringify(options)
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe", "ipc"], env: { ...process.env, NODE_OPTIONS: "" } }
  )
  let output = ""
  child.stdout?.on("data", (d) => {
    output += d
  })
  child.stderr?.on("data", (d) => {
    output += d
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const pending = new Map<
    number,
    // biome-ignore lint/suspicious/noExplicitAny: see `ask`
    { resolve: (v: Record<string, any>) => void; reject: (e: Error) => void }
  >()
  let next = 0
  const ready = new Promise<{ url: string; oracleDid: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the SDK test server did not start:\n${output}`)), 30_000)
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`the SDK test server exited:\n${output}`))
    })
    // biome-ignore lint/suspicious/noExplicitAny: see `ask`
    child.on("message", (message: Record<string, any> & { id?: number }) => {
      if (message.type === "ready") {
        clearTimeout(timer)
        resolve({ url: message.url!, oracleDid: message.oracleDid! })
        return
      }
      const waiting = message.id === undefined ? undefined : pending.get(message.id)
      if (waiting === undefined) return
      pending.delete(message.id!)
      if (message.error !== undefined) waiting.reject(new Error(message.error))
      else waiting.resolve(message)
    })
  })
  // biome-ignore lint/suspicious/noExplicitAny: IPC answers are plain JSON read by field
  const ask = (request: Record<string, unknown>): Promise<Record<string, any>> =>
    new Promise((resolve, reject) => {
      const id = next++
      pending.set(id, { resolve, reject })
      child.send({ id, ...request })
    })
  const { url, oracleDid } = await ready.catch((error: unknown) => {
    // A server that did not come up is not left behind.
    child.kill("SIGKILL")
    throw error
  })
  return {
    url,
    oracleDid,
    newUser: async () => {
      const { did } = await ask({ type: "user" })
      return sdkUser(did!, (type, ttlSeconds) =>
        ask({ type, did, ttlSeconds }).then((answer) => answer.token!)
      )
    },
    release: async () => {
      await ask({ type: "release" })
    },
    topUp: async (did, amount) => (await ask({ type: "top-up", did, amount })).balance as number,
    balance: async (did) => (await ask({ type: "balance", did })).balance as number,
    statusOf: async (did, path) => (await ask({ type: "get", did, path })).status as number,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.send({ type: "stop" })
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
      await exited
      clearTimeout(timer)
    }
  }
}

/**
 * React's act() warnings are about updates a test did not wrap; here every update comes from the
 * network (the stream, the history refetch after a turn), so the tests observe with `waitFor`
 * instead, and the act environment is off (RTL turns it on in its own beforeAll, registered first).
 */
/** jsdom's `localStorage` (the repository's type-check has no DOM library). */
const storage = () => (globalThis as unknown as { localStorage: { clear(): void } }).localStorage

export const quietAct = () => {
  beforeAll(() => {
    ;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = false
  })
  // The SDK caches tokens in localStorage per (user, oracle): each test starts without any.
  beforeEach(() => storage().clear())
  afterEach(() => storage().clear())
}

/** One request the SDK made: method, path with query, and the response's status. */
export interface Exchange {
  readonly method: string
  readonly path: string
  readonly status: number
  /** The body, when it is JSON (streams are left alone). */
  readonly body?: unknown
}

/**
 * Records every `fetch` to `origin` (the SDK's requests) while the test runs; the requests pass
 * through untouched. Call inside a test file, at the top level.
 */
export const recordFetch = (origin: () => string | undefined) => {
  const exchanges: Array<Exchange> = []
  let original: typeof fetch | undefined
  beforeEach(() => {
    exchanges.length = 0
    original = globalThis.fetch
    const inner = original
    globalThis.fetch = async (input, init) => {
      const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url)
      const response = await inner(input, init)
      if (url.origin === origin()) {
        const json = response.headers.get("content-type")?.includes("application/json") === true
        exchanges.push({
          method: init?.method ?? "GET",
          path: url.pathname + url.search,
          status: response.status,
          ...(json ? { body: await response.clone().json() } : {})
        })
      }
      return response
    }
  })
  afterEach(() => {
    if (original !== undefined) globalThis.fetch = original
  })
  return exchanges
}

/** A user of the SDK: its DID and the token factories its `OraclesProvider` is given. */
export interface SdkUser {
  readonly did: string
  /** `createDelegation`: the user's delegation to the oracle, as `x-ucan-delegation` carries it. */
  readonly createDelegation: (oracleDid: string) => Promise<{ serialized: string; expiresAt: number }>
  /** `createInvocation`: an invocation of the user addressed to the oracle (`Authorization: Bearer`). */
  readonly createInvocation: (oracleDid: string) => Promise<{ serialized: string; expiresAt: number }>
  /** How many tokens each factory minted. */
  readonly minted: { delegations: number; invocations: number }
}

/** Invocations live 10 minutes (the oracle accepts at most 15); the SDK reuses one until 30 s before. */
const INVOCATION_TTL_S = 600
/** Delegations live an hour; the SDK drops a cached one 5 minutes before it expires. */
const DELEGATION_TTL_S = 3600

/** A user whose tokens `mint` makes (the server process signs them with the user's key). */
const sdkUser = (
  did: string,
  mint: (type: "delegation" | "invocation", ttlSeconds: number) => Promise<string>
): SdkUser => {
  const minted = { delegations: 0, invocations: 0 }
  return {
    did,
    minted,
    createDelegation: async () => {
      minted.delegations += 1
      return {
        serialized: await mint("delegation", DELEGATION_TTL_S),
        expiresAt: Date.now() + DELEGATION_TTL_S * 1000
      }
    },
    createInvocation: async () => {
      minted.invocations += 1
      return {
        serialized: await mint("invocation", INVOCATION_TTL_S),
        expiresAt: Date.now() + INVOCATION_TTL_S * 1000
      }
    }
  }
}

/**
 * The `OraclesProvider` around a hook, for `user`: a wallet with no chain address (so the SDK
 * never asks the chain for an authz config) and a query client that does not retry (a failure
 * shows at once).
 */
export const providerFor = (user: SdkUser) => {
  const queryClient = new QueryClient({
    defaultOptions: { queries: { retry: false }, mutations: { retry: false } }
  })
  const initialWallet = { address: "", did: user.did, matrix: { accessToken: "", homeServer: "" } }
  const transactSignX = async () => undefined
  const wrapper = ({ children }: { children: ReactNode }) =>
    createElement(
      OraclesProvider,
      {
        initialWallet,
        transactSignX,
        createDelegation: user.createDelegation,
        createInvocation: user.createInvocation,
        queryClient
      },
      children
    )
  return { wrapper, queryClient }
}

/** The URL overrides every hook gets, so the SDK never looks the oracle up on the chain. */
export const overridesFor = (url: string) => ({ baseUrl: url, wsUrl: url })

/** `useOracleSessions` of `user` against the server at `url`. */
export const renderSessions = (server: Oracle, user: SdkUser, limit?: number) => {
  const overrides = { baseUrl: server.url, ...(limit === undefined ? {} : { limit }) }
  const { wrapper, queryClient } = providerFor(user)
  const rendered = renderHook(() => useOracleSessions(server.oracleDid, overrides), { wrapper })
  return { ...rendered, queryClient }
}

/** Stand-ins for the UI components `useChat` renders tool calls and errors with (enables them). */
export const uiComponents = {
  ToolCall: () => null,
  Error: () => null
} as unknown as NonNullable<IChatOptions["uiComponents"]>

/** What `useChat` returns. */
export type Chat = ReturnType<typeof useChat>

/** A rendered `useChat`, the payment callback's calls, and every message list it rendered. */
export interface RenderedChat extends RenderHookResult<Chat, unknown> {
  readonly payments: Array<Array<string>>
  /** Every distinct `status` the hook rendered, in order. */
  readonly statuses: Array<Chat["status"]>
  readonly queryClient: QueryClient
  readonly views: Array<ReadonlyArray<IMessage>>
}

/** Options of `renderChat`. */
export interface ChatOptions {
  readonly withUiComponents?: boolean
  /** `useChat`'s `historyPageSize` (turns per history page; the SDK's default is 20). */
  readonly historyPageSize?: number
  /** The `baseUrl` the hook talks HTTP to (default the server's; see network.ts `page`). */
  readonly baseUrl?: string
  /** Also called with each call of `onPaymentRequiredError`, as it happens. */
  readonly onPayment?: (claims: Array<string>) => void
}

/** `useChat` of `user` on `sessionId`, with stable options; `payments` records the 402 callback. */
export const renderChat = (
  server: Oracle,
  user: SdkUser,
  sessionId: string,
  options: ChatOptions = {}
): RenderedChat => {
  const payments: Array<Array<string>> = []
  const onPaymentRequiredError = (claims: Array<string>) => {
    payments.push(claims)
    options.onPayment?.(claims)
  }
  const statuses: Array<Chat["status"]> = []
  const overrides = { baseUrl: options.baseUrl ?? server.url, wsUrl: server.url }
  const { wrapper, queryClient } = providerFor(user)
  // Every distinct message list the hook rendered, in order: what a user saw while the turn streamed.
  const views: Array<ReadonlyArray<IMessage>> = []
  const rendered = renderHook(
    () => {
      const chat = useChat({
        oracleDid: server.oracleDid,
        sessionId,
        overrides,
        onPaymentRequiredError,
        ...(options.withUiComponents === true ? { uiComponents } : {}),
        ...(options.historyPageSize === undefined ? {} : { historyPageSize: options.historyPageSize })
      })
      if (views.at(-1) !== chat.messages) views.push(chat.messages)
      if (statuses.at(-1) !== chat.status) statuses.push(chat.status)
      return chat
    },
    { wrapper }
  )
  return { ...rendered, payments, queryClient, statuses, views }
}

/** Waits for `check` (an expectation) to pass, up to `timeout` ms. */
export const until = <T>(check: () => T, timeout = 10_000): Promise<T> =>
  waitFor(check, { timeout, interval: 20 })

/** The text of a message as the hook holds it (a string, or the strings among its parts). */
export const textOf = (message: IMessage): string =>
  typeof message.content === "string"
    ? message.content
    : Array.isArray(message.content)
      ? message.content.filter((part): part is string => typeof part === "string").join("")
      : ""

/** A tool-call bubble: the component part of a message, as `useChat` builds it. */
export interface ToolCallPart {
  readonly messageId: string
  /** The component's name (`ToolCall` unless `uiComponents` has one named after the tool). */
  readonly name: string
  readonly id: string
  readonly args: unknown
  readonly status?: string | undefined
  readonly output?: string | undefined
  readonly toolName?: string | undefined
}

/** The tool-call bubbles of a message list: the component parts marked `isToolCall`. */
export const toolCallParts = (messages: ReadonlyArray<IMessage>): Array<ToolCallPart> =>
  messages.flatMap((m) => {
    const parts = Array.isArray(m.content) ? m.content : [m.content]
    return parts.flatMap((part): Array<ToolCallPart> => {
      if (typeof part !== "object" || part === null || part.props?.isToolCall !== true) return []
      const { id, args, status, output, toolName } = part.props
      return [{ messageId: m.id, name: part.name, id, args, status, output, toolName }]
    })
  })

/** A new session of `user`, created through `useOracleSessions`. */
export const createSession = async (server: Oracle, user: SdkUser): Promise<string> => {
  const { result, unmount } = renderSessions(server, user)
  try {
    await until(() => expect(result.current.isLoading).toBe(false))
    return (await result.current.createSession()).sessionId
  } finally {
    unmount()
  }
}
