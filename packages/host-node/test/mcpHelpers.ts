/**
 * What the MCP and skills tests share: the real `server-everything`'s entry, a wrapper around it
 * that counts its starts (so a test sees whether a boot spawned it or used the cache), the
 * ToolMessage the scripted model read for a call, and a streamed turn's answer.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { ToolMessage } from "@langchain/core/messages"
import type { EventSink } from "@plugboard/core"
import type { ScriptedTurn } from "@plugboard/models"

/** The entry of `@modelcontextprotocol/server-everything` (run it as `node <entry> stdio`). */
export const everythingEntry = join(
  dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist",
  "index.js"
)

/**
 * Writes, in `dir`, a script that runs server-everything over stdio and appends a line to a
 * counter file each time it starts; returns the script and a function reading the count.
 */
export const countingEverything = (
  dir: string
): { readonly script: string; readonly starts: () => number } => {
  const counter = join(dir, "starts.txt")
  writeFileSync(counter, "")
  const script = join(dir, "everything.mjs")
  writeFileSync(
    script,
    [
      'import { appendFileSync } from "node:fs"',
      `appendFileSync(${JSON.stringify(counter)}, "start\\n")`,
      'process.argv = [process.argv[0], process.argv[1], "stdio"]',
      `await import(${JSON.stringify(pathToFileURL(everythingEntry).href)})`
    ].join("\n")
  )
  return { script, starts: () => readFileSync(counter, "utf8").split("\n").filter(Boolean).length }
}

/** The latest ToolMessage answering a call of `tool`, as the model read it on this invocation. */
export const answerTo = (turn: ScriptedTurn, tool: string): ToolMessage => {
  const found = [...turn.messages]
    .reverse()
    .find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.name === tool)
  if (found === undefined) throw new Error(`no ToolMessage for ${tool}`)
  return found
}

/** A ToolMessage's content as text (blocks as their JSON). */
export const toolText = (m: ToolMessage): string =>
  typeof m.content === "string" ? m.content : JSON.stringify(m.content)

/** The answer a streamed turn sent, its `message` chunks joined. */
export const answerOf = (events: ReadonlyArray<EventSink.AgentEvent>): string =>
  events
    .filter((e): e is typeof EventSink.Message.Type => e._tag === "message")
    .map((e) => e.content)
    .join("")
