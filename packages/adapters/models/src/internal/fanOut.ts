/**
 * The router's requests about several entities ("the weather in Berlin, Paris and Rome"): one
 * tool, called once per entity. The router plays two models here, so `pnpm bench codemode` can
 * compare them on the same requests (docs/code-mode.md#what-it-saves):
 * - with `run_code` offered (code mode), it writes one program that calls the tool for each
 *   entity and returns the answers, the way a model that writes code does;
 * - without it, it calls the tool for one entity per model call, reading each answer before the
 *   next call, the way a model that is not given code works through a list; then it answers
 *   about every result of the turn.
 * Each entity's call is what the router would make for that entity alone (the request with the
 * list replaced by the entity), so the arguments are adapted exactly as for a one-entity request.
 */
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { CodeMode } from "@plugboard/core"
import type { ScriptedToolCall, ScriptedTurn } from "../Script.js"
import { LOAD_CAPABILITY } from "./conversation.js"

/** A list of entities in a request: the items and where the list stands in the text. */
export interface EntityList {
  readonly items: ReadonlyArray<string>
  readonly start: number
  readonly end: number
}

const WORD = "[\\p{L}\\p{N}][\\p{L}\\p{N}.'’+/@-]*"
const ITEM = `${WORD}(?: ${WORD}){0,2}`
const LIST = new RegExp(`(${ITEM})((?:, ${ITEM})+),? (?:and|or) (${ITEM})`, "u")
/** Most entities fanned out: a longer list is a request the router leaves to one call. */
export const MAX_ENTITIES = 10

/**
 * The list of two to `MAX_ENTITIES` entities in `text` ("Berlin, Paris and Rome", "Ana Silva,
 * Ben Okafor and Dev Patel"), or `undefined`. Each item is as many words as the second one (the
 * first item's capture runs back into the sentence, "weather in Berlin"; the last one on into it).
 */
export const entityList = (text: string): EntityList | undefined => {
  const m = LIST.exec(text)
  if (m === null) return undefined
  const middle = m[2]!
    .split(", ")
    .slice(1)
    .map((s) => s.trim())
  const width = middle[0]!.split(" ").length
  const lastWords = (s: string) => s.split(" ").slice(-width).join(" ")
  const firstWords = (s: string) => s.split(" ").slice(0, width).join(" ")
  const first = lastWords(m[1]!)
  const last = firstWords(m[3]!.replace(/[.,;:!?]+$/, ""))
  const items = [first, ...middle, last]
  if (items.length > MAX_ENTITIES || new Set(items.map((i) => i.toLowerCase())).size < items.length)
    return undefined
  const start = m.index + m[1]!.length - first.length
  const end = m.index + m[0].length - (m[3]!.length - last.length)
  return { items, start, end }
}

/** `text` with its list replaced by one entity. */
const forEntity = (text: string, list: EntityList, item: string): string =>
  `${text.slice(0, list.start)}${item}${text.slice(list.end)}`

const lastHuman = (messages: ReadonlyArray<BaseMessage>): number => {
  for (let i = messages.length - 1; i >= 0; i--) if (HumanMessage.isInstance(messages[i])) return i
  return -1
}

/**
 * The turn as it would be had the user asked about `item` alone: the request rewritten, and of
 * this turn's calls only its loads (what the router learned), so that the router decides that
 * entity's call afresh.
 */
export const turnFor = (turn: ScriptedTurn, list: EntityList, item: string): ScriptedTurn => {
  const at = lastHuman(turn.messages)
  const human = turn.messages[at]!
  const loads = new Set<string>()
  const after = turn.messages.slice(at + 1).flatMap((m): Array<BaseMessage> => {
    if (AIMessage.isInstance(m)) {
      const calls = (m.tool_calls ?? []).filter((c) => c.name === LOAD_CAPABILITY)
      for (const c of calls) if (c.id !== undefined) loads.add(c.id)
      return calls.length === 0 ? [] : [new AIMessage({ content: "", tool_calls: calls })]
    }
    return ToolMessage.isInstance(m) && loads.has(m.tool_call_id) ? [m] : []
  })
  return {
    ...turn,
    messages: [...turn.messages.slice(0, at), new HumanMessage(forEntity(human.text, list, item)), ...after]
  }
}

/** The namespace `run_code`'s API puts `tool` in (the line `  <namespace>: {` above it). */
export const namespaceIn = (runCodeDescription: string, tool: string): string | undefined => {
  let namespace: string | undefined
  for (const line of runCodeDescription.split("\n")) {
    const ns = /^ {2}("?)([^":]+)\1: \{$/.exec(line)
    if (ns !== null) namespace = ns[2]
    else if (
      line.trimStart().startsWith(`${tool}(`) ||
      line.trimStart().startsWith(`${JSON.stringify(tool)}(`)
    )
      return namespace
  }
  return undefined
}

/**
 * The program that makes `calls` (one per entity, keyed by the entity) and returns every answer
 * by entity: what the router writes in code mode.
 */
export const programFor = (
  namespace: string,
  calls: ReadonlyArray<{ readonly item: string; readonly call: ScriptedToolCall }>
): string => {
  const fn = CodeMode.pathOf({ namespace, name: calls[0]!.call.tool })
  const inputs = calls.map((c) => `  [${JSON.stringify(c.item)}, ${JSON.stringify(c.call.args ?? {})}]`)
  return [
    `const inputs = [\n${inputs.join(",\n")}\n]`,
    "const results = {}",
    `for (const [entity, input] of inputs) results[entity] = await ${fn}(input)`,
    "return results"
  ].join("\n")
}

/** Whether `turn` offers `run_code`, and its description (the API) when it does. */
export const runCodeOf = (turn: ScriptedTurn): string | undefined =>
  turn.offeredTools.includes(CodeMode.RUN_CODE)
    ? (turn.tools?.find((t) => t.name === CodeMode.RUN_CODE)?.description ?? "")
    : undefined
