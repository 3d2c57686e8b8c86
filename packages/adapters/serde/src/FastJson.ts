/**
 * A faster reader and writer for LangGraph's default `JsonPlusSerializer` "json" format.
 *
 * Writing: the serializer first walks the whole value looking for cycles (to print
 * "[Circular]"), then runs `JSON.stringify` with a replacer that tests every value — strings
 * and numbers included — against its special types. `dumpJsonPlus` skips the cycle walk (a
 * cycle makes `JSON.stringify` throw, and then the stock serializer runs, so its output is
 * kept for that case too) and only tests objects. Same bytes out; `FastJson.test.ts` checks.
 *
 * Reading:
 * the serializer's own reader revives bottom-up with an `await` on every property of every
 * object, so reading a checkpoint whose `messages` hold a few dozen messages costs thousands
 * of promise turns. This reader walks synchronously and only goes asynchronous where a
 * LangChain object (an `lc: 1` constructor record, e.g. a message) must be `load`ed — with the
 * same result: the same `lc: 2` records (undefined, DeltaSnapshot, Set, Map, RegExp, Error,
 * Uint8Array) are revived, unknown ones are left inert, and LangChain objects go through
 * `@langchain/core/load` exactly as before. `FastJson.test.ts` checks the equivalence.
 *
 * Used only when the saver's serde is the stock `JsonPlusSerializer`; any other serde is
 * called as is.
 */
import { load } from "@langchain/core/load"
import * as messageClasses from "@langchain/core/messages"
import { DeltaSnapshot, JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint"

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null

const isBytes = (v: unknown): v is Array<number> =>
  Array.isArray(v) && v.every((x) => typeof x === "number" && Number.isInteger(x) && x >= 0 && x <= 255)

const singleArray = (args: unknown): args is [Array<unknown>] =>
  Array.isArray(args) && args.length === 1 && Array.isArray(args[0])

/** The closed set of `lc: 2` constructor records; `undefined` = leave the record as it is. */
const reviveConstructor = (r: Record<string, unknown>): unknown => {
  const id = r.id
  if (!Array.isArray(id) || id.length !== 1) return undefined
  const noMethod = r.method === undefined || r.method === null
  const args = r.args
  switch (id[0]) {
    case "Set":
      return noMethod && singleArray(args) ? new Set(args[0]) : undefined
    case "Map":
      return noMethod && singleArray(args) && args[0].every((e) => Array.isArray(e) && e.length === 2)
        ? new Map(args[0] as Array<[unknown, unknown]>)
        : undefined
    case "RegExp":
      if (!noMethod || !Array.isArray(args) || args.length !== 2) return undefined
      if (typeof args[0] !== "string" || typeof args[1] !== "string") return undefined
      try {
        return new RegExp(args[0], args[1])
      } catch {
        return undefined
      }
    case "Error":
      return noMethod && Array.isArray(args) && args.length === 1 && typeof args[0] === "string"
        ? new Error(args[0])
        : undefined
    case "Uint8Array":
      return (noMethod || r.method === "from") && singleArray(args) && isBytes(args[0])
        ? new Uint8Array(args[0])
        : undefined
    default:
      return undefined
  }
}

/** The message classes `load` builds from `["langchain_core", "messages", <name>]` records. */
const MESSAGE_CLASSES = new Set([
  "AIMessage",
  "AIMessageChunk",
  "HumanMessage",
  "HumanMessageChunk",
  "SystemMessage",
  "SystemMessageChunk",
  "ToolMessage",
  "ToolMessageChunk",
  "ChatMessage",
  "ChatMessageChunk",
  "FunctionMessage",
  "FunctionMessageChunk",
  "RemoveMessage"
])

type Constructor = new (fields: Record<string, unknown>) => unknown

/** `load`'s key mapping for a class: its `lc_aliases` up the prototype chain, inverted (cached). */
const aliasesByClass = new Map<Constructor, Record<string, string>>()
const invertedAliases = (builder: Constructor): Record<string, string> => {
  let inverted = aliasesByClass.get(builder)
  if (inverted === undefined) {
    const aliases: Record<string, string> = {}
    for (let c: unknown = builder; typeof c === "function" && c.prototype; c = Object.getPrototypeOf(c)) {
      Object.assign(aliases, Reflect.get(c.prototype as object, "lc_aliases"))
    }
    inverted = {}
    for (const [key, value] of Object.entries(aliases)) inverted[value] = key
    aliasesByClass.set(builder, inverted)
  }
  return inverted
}

/** `load`'s `camelCase` for a stored key. */
const camelCase = (key: string): string => {
  const trimmed = key.trim()
  if (!/[-_\s]/.test(trimmed)) return trimmed
  return trimmed
    .replace(/[-_\s]+/g, "_")
    .toLowerCase()
    .replace(/_+([a-z0-9])/g, (_, char: string) => char.toUpperCase())
}

/**
 * Plain JSON data only (what `load`'s reviver copies as it is): no record it would treat
 * specially (`lc`, `__lc_escaped__`), nothing an `lc: 2` record became, within its depth limit.
 */
const isPlainData = (v: unknown, depth: number): boolean => {
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return true
  if (typeof v !== "object" || depth > 40) return false
  if (Array.isArray(v)) return v.every((x) => isPlainData(x, depth + 1))
  if (Object.getPrototypeOf(v) !== Object.prototype || "lc" in v || "__lc_escaped__" in v) return false
  for (const x of Object.values(v)) if (!isPlainData(x, depth + 1)) return false
  return true
}

/**
 * A LangChain message record built without `load`'s round trip (which stringifies the record,
 * parses it again and revives it with an `await` per property): the same class, from the same
 * kwargs mapped the same way, when the kwargs are plain data; `undefined` (use `load`) otherwise.
 */
const loadMessage = (obj: Record<string, unknown>): unknown => {
  const id = obj.id as Array<unknown>
  if (id.length !== 3 || id[0] !== "langchain_core" || id[1] !== "messages") return undefined
  const name = id[2]
  if (typeof name !== "string" || !MESSAGE_CLASSES.has(name)) return undefined
  const builder = (messageClasses as unknown as Record<string, unknown>)[name]
  const kwargs = obj.kwargs
  if (typeof builder !== "function" || !isPlainData(kwargs, 2) || Array.isArray(kwargs) || kwargs === null) {
    return undefined
  }
  const aliases = invertedAliases(builder as Constructor)
  const fields: Record<string, unknown> = {}
  for (const key in kwargs as Record<string, unknown>) {
    if (Object.hasOwn(kwargs as object, key)) {
      fields[aliases[key] || camelCase(key)] = (kwargs as Record<string, unknown>)[key]
    }
  }
  const instance = new (builder as Constructor)(fields)
  Object.defineProperty((instance as { constructor: unknown }).constructor, "name", { value: name })
  return instance
}

/** Applies the record rules to an object whose members are already revived. */
const finish = (obj: Record<string, unknown>): unknown => {
  if (obj.lc === 2) {
    if (obj.type === "undefined") return undefined
    if (obj.type === "delta_snapshot" && Object.hasOwn(obj, "value")) return new DeltaSnapshot(obj.value)
    if (obj.type === "constructor") return reviveConstructor(obj) ?? obj
  }
  if (obj.lc === 1 && obj.type === "constructor" && Array.isArray(obj.id)) {
    return (Object.hasOwn(obj, "kwargs") ? loadMessage(obj) : undefined) ?? load(JSON.stringify(obj))
  }
  return obj
}

const revive = (value: Json): unknown => {
  if (!isRecord(value)) return value
  let pending = false
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length)
    for (let i = 0; i < value.length; i++) {
      const v = revive(value[i]!)
      if (v instanceof Promise) pending = true
      out[i] = v
    }
    return pending ? Promise.all(out) : out
  }
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const v = revive(value[key]!)
    if (v instanceof Promise) pending = true
    out[key] = v
  }
  if (!pending) return finish(out)
  return Promise.all(Object.values(out)).then((values) => {
    const keys = Object.keys(out)
    for (let i = 0; i < keys.length; i++) out[keys[i]!] = values[i]
    return finish(out)
  })
}

const decoder = new TextDecoder()

/** Reads a JsonPlusSerializer "json" payload, like `loadsTyped("json", data)` does. */
export const loadJsonPlus = (data: string | Uint8Array): unknown =>
  revive(JSON.parse(typeof data === "string" ? data : decoder.decode(data)) as Json)

/** The `lc: 2` record of a constructor call, as the serializer writes it. */
const constructorRecord = (name: string, method: string | null, args: Array<unknown>) => ({
  lc: 2,
  type: "constructor",
  id: [name],
  method,
  args,
  kwargs: {}
})

const UNDEFINED = { lc: 2, type: "undefined" }

/** The serializer's replacer, testing only what can be special (objects, functions, undefined). */
const replacer = (_key: string, value: unknown): unknown => {
  if (value === undefined) return UNDEFINED
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return value
  if (value instanceof DeltaSnapshot) return { lc: 2, type: "delta_snapshot", value: value.value }
  if (value instanceof Set || value instanceof Map) {
    return constructorRecord(value.constructor.name, null, [Array.from(value as Iterable<unknown>)])
  }
  if (value instanceof RegExp) return constructorRecord("RegExp", null, [value.source, value.flags])
  if (value instanceof Error) return constructorRecord("Error", null, [value.message])
  const send = value as { lg_name?: unknown; node?: unknown; args?: unknown; timeout?: unknown }
  if (send.lg_name === "Send") {
    return send.timeout !== undefined
      ? { node: send.node, args: send.args, timeout: send.timeout }
      : { node: send.node, args: send.args }
  }
  if (value instanceof Uint8Array) return constructorRecord("Uint8Array", "from", [Array.from(value)])
  return value
}

const encoder = new TextEncoder()

/**
 * `serde.dumpsTyped(value)` of the stock JsonPlusSerializer, faster; falls back to `serde`
 * itself whenever `JSON.stringify` throws (a cycle, a BigInt), so even those cases match.
 */
export const dumpJsonPlus = (
  serde: SerializerProtocol,
  value: unknown
): Promise<[string, Uint8Array]> | [string, Uint8Array] => {
  if (value instanceof Uint8Array) return ["bytes", value]
  try {
    return ["json", encoder.encode(JSON.stringify(value, replacer))]
  } catch {
    return serde.dumpsTyped(value)
  }
}

/**
 * `serde.loadsTyped`, short-circuited through `loadJsonPlus` when `serde` is the stock
 * JsonPlusSerializer (a subclass may override reading, so only the exact class qualifies).
 */
export const makeLoader = (serde: SerializerProtocol) => {
  const fast = serde.constructor === JsonPlusSerializer
  return (type: string, data: string | Uint8Array): unknown | Promise<unknown> =>
    fast && type === "json" ? loadJsonPlus(data) : serde.loadsTyped(type, data)
}

/** `serde.dumpsTyped`, through `dumpJsonPlus` when `serde` is the stock JsonPlusSerializer. */
export const makeDumper = (serde: SerializerProtocol) => {
  const fast = serde.constructor === JsonPlusSerializer
  return (value: unknown): Promise<[string, Uint8Array]> | [string, Uint8Array] =>
    fast ? dumpJsonPlus(serde, value) : serde.dumpsTyped(value)
}
