/**
 * LangGraph's official checkpointer conformance suite, run as a library (its CLI is broken,
 * see TOOLCHAIN.md) against this package's saver, and against LangGraph's MemorySaver as a
 * control that the harness itself works.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { MemorySaver } from "@langchain/langgraph-checkpoint"
import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation"
import { afterAll } from "vitest"
import { makeSqliteSaver, type OwnedSqliteSaver } from "../src/index.js"

const dir = mkdtempSync(join(tmpdir(), "plugboard-conformance-"))
let n = 0
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const sqlite = {
  checkpointerName: "@plugboard/sqlite",
  createCheckpointer: () => makeSqliteSaver({ filename: join(dir, `c${n++}.sqlite`) }),
  destroyCheckpointer: (saver: OwnedSqliteSaver) => saver.close()
}

validate(sqlite)
deltaChannelHistoryTests(sqlite)

validate({ checkpointerName: "MemorySaver", createCheckpointer: () => new MemorySaver() })
