/** Shared test helpers: temp directories and realistic checkpoints. */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AIMessage, HumanMessage } from "@langchain/core/messages"
import { type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint"

/** A fresh temp directory, removed by the returned cleanup. */
export const tempDir = (prefix = "plugboard-sqlite-"): { dir: string; cleanup: () => void } => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A checkpoint at `step` whose messages channel holds `step` exchanges. */
export const conversationCheckpoint = (step: number): Checkpoint => {
  const messages = []
  for (let i = 0; i < step; i++) {
    messages.push(new HumanMessage({ content: `question ${i}`, id: `h${i}` }))
    messages.push(new AIMessage({ content: `answer ${i} `.repeat(20), id: `a${i}` }))
  }
  return {
    v: 4,
    id: uuid6(step),
    ts: new Date(Date.UTC(2025, 0, 1, 0, 0, step)).toISOString(),
    channel_values: { messages, loadedPlugins: ["weather"], step },
    channel_versions: { messages: step + 1, loadedPlugins: 1, step: step + 1 },
    versions_seen: { agent: { messages: step } }
  }
}
