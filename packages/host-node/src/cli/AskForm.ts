/**
 * `plugboard chat` answers a question a call asks (an `input` wait: an MCP elicitation,
 * docs/waiting.md) on the terminal: "answer it?" (n declines), then one line per field of the
 * form's JSON Schema (a string, a number or integer, a boolean as y/n, one of an `enum`); an
 * empty line skips an optional field. The server checks the values; when it refuses them, its
 * reason is printed and the form is asked again.
 */
import type { EventSink } from "@plugboard/core"
import type { Ask } from "./ChatClient.js"

/** What the user answered: values, a decline, or nothing (no terminal, or stdin closed). */
export type FormReply =
  | { readonly _tag: "values"; readonly values: Record<string, unknown> }
  | { readonly _tag: "decline" }
  | undefined

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

/** One field's line read as its type: the value, `undefined` to skip it, or a sentence why not. */
const read = (
  type: unknown,
  options: ReadonlyArray<string> | undefined,
  line: string
): { readonly value?: unknown; readonly why?: string } => {
  const text = line.trim()
  if (text === "") return {}
  if (options !== undefined && !options.includes(text)) return { why: `one of ${options.join(", ")}` }
  if (type === "number" || type === "integer") {
    const n = Number(text)
    return Number.isFinite(n) ? { value: n } : { why: "a number" }
  }
  if (type === "boolean") {
    if (/^(y|yes|true)$/i.test(text)) return { value: true }
    if (/^(n|no|false)$/i.test(text)) return { value: false }
    return { why: "y or n" }
  }
  return { value: text }
}

/** Asks the question of `waiting` (kind `input`) on the terminal, field by field. */
export const askForm = async (
  waiting: Extract<EventSink.AgentEvent, { _tag: "waiting" }>,
  ask: Ask,
  out: (text: string) => void
): Promise<FormReply> => {
  const start = await ask(`Answer it? [y, or n to decline] `)
  if (start === undefined) return undefined
  if (/^(n|no|decline)$/i.test(start.trim())) return { _tag: "decline" }
  const schema = isRecord(waiting.schema) ? waiting.schema : {}
  const properties = isRecord(schema.properties) ? schema.properties : {}
  const required = Array.isArray(schema.required) ? schema.required : []
  const values: Record<string, unknown> = {}
  for (const [name, raw] of Object.entries(properties)) {
    const p = isRecord(raw) ? raw : {}
    const options = Array.isArray(p.enum) ? p.enum.map(String) : undefined
    const label = typeof p.title === "string" && p.title !== "" ? p.title : name
    const kind = options === undefined ? String(p.type ?? "text") : options.join("|")
    const optional = !required.includes(name)
    for (;;) {
      const line = await ask(`  ${label} (${kind})${optional ? " [enter to skip]" : ""}: `)
      if (line === undefined) return undefined
      const { value, why } = read(p.type, options, line)
      if (why !== undefined) {
        out(`  Type ${why}.\n`)
        continue
      }
      if (value === undefined && !optional) {
        out(`  ${label} is required.\n`)
        continue
      }
      if (value !== undefined) values[name] = value
      break
    }
  }
  return { _tag: "values", values }
}
