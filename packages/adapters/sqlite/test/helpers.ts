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

/**
 * A checkpoint at `step` whose messages channel holds `step` exchanges; with a `tag`, every
 * message names it (so two writers' conversations differ).
 */
export const conversationCheckpoint = (step: number, tag = ""): Checkpoint => {
  const messages = []
  const prefix = tag === "" ? "" : `${tag} `
  for (let i = 0; i < step; i++) {
    messages.push(new HumanMessage({ content: `${prefix}question ${i}`, id: `${tag}h${i}` }))
    messages.push(new AIMessage({ content: `${prefix}answer ${i} `.repeat(20), id: `${tag}a${i}` }))
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

/**
 * Gives `channels` their next versions from `saver.getNextVersion`, as LangGraph does for the
 * channels a step changed; returns the `newVersions` to pass to `put`.
 */
export const bumpVersions = (
  saver: { getNextVersion(current: number | undefined): number },
  versions: Record<string, number>,
  channels: ReadonlyArray<string>
): Record<string, number> => {
  const changed: Record<string, number> = {}
  for (const channel of channels) {
    versions[channel] = saver.getNextVersion(versions[channel])
    changed[channel] = versions[channel]
  }
  return changed
}
