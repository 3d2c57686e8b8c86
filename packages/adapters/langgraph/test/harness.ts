/**
 * Shared set-up of the agent-loop tests: the checkpointers every scenario runs against, and a
 * helper that builds an agent for one request on the test catalog.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { MemorySaver } from "@langchain/langgraph"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Catalog, type EventSink, type Plugin, type RuntimeLogger } from "@plugboard/core"
import { makeSqliteSaver } from "@plugboard/sqlite"
import { createMainAgent, type MainAgent } from "../src/index.js"

/** A checkpointer and how to release it. */
export interface SaverFixture {
  readonly saver: BaseCheckpointSaver
  readonly close: () => void
  /** For a durable saver: a second saver on the same storage (what a restarted host opens). */
  readonly reopen?: () => BaseCheckpointSaver
}

/**
 * Whether this Node can open a SQLite file: better-sqlite3 13 (under @plugboard/sqlite, a dev
 * dependency of this package) is built for Node-API 10, which Node has from 22.14, and crashes an
 * older one. This package itself needs no SQLite and keeps Node 20.19, where
 * scripts/lower-bound-tests.mjs runs these tests: there the scenarios run on `MemorySaver` only.
 */
export const sqliteLoads = Number(process.versions.napi) >= 10

/** A SQLite file per fixture, reopened as a restarted host would. */
const sqliteSaver: readonly [string, () => SaverFixture] = [
  "SqliteSaver",
  () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-agent-"))
    const filename = join(dir, "user.sqlite")
    const saver = makeSqliteSaver({ filename })
    const reopened: Array<ReturnType<typeof makeSqliteSaver>> = []
    return {
      saver,
      reopen: () => {
        const again = makeSqliteSaver({ filename })
        reopened.push(again)
        return again
      },
      close: () => {
        for (const s of reopened) s.close()
        saver.close()
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }
]

/** Every checkpointer the end-to-end scenarios run against (`SqliteSaver` where `sqliteLoads`). */
export const savers: ReadonlyArray<readonly [string, () => SaverFixture]> = [
  ["MemorySaver", () => ({ saver: new MemorySaver(), close: () => {} })],
  ...(sqliteLoads ? [sqliteSaver] : [])
]

/** Builds the agent for one request of `did` in `sessionId`. */
export const agentFor = (options: {
  readonly plugins: ReadonlyArray<Plugin>
  readonly catalog?: Catalog.Catalog
  readonly model: BaseChatModel
  readonly saver: BaseCheckpointSaver
  readonly sessionId: string
  readonly did?: string
  readonly eventSink?: EventSink.EventSinkService
  readonly logger?: RuntimeLogger
  readonly shared?: Readonly<Record<string, unknown>>
  readonly signal?: AbortSignal
}): Promise<MainAgent> =>
  createMainAgent({
    catalog: options.catalog ?? Catalog.unsafeMake(options.plugins),
    model: options.model,
    checkpointer: options.saver,
    basePrompt: "You are a test assistant.",
    ...(options.eventSink === undefined ? {} : { eventSink: options.eventSink }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    shared: options.shared ?? { greeting: "hello" },
    request: {
      did: options.did ?? "did:key:alice",
      sessionId: options.sessionId,
      requestId: "req-1",
      signal: options.signal
    }
  })
