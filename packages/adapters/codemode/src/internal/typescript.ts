/**
 * TypeScript in, JavaScript out: the model is shown a typed API (`CodeMode`) and often writes
 * types, so the program is passed through Node's own `stripTypeScriptTypes` (`node:module`, Node
 * ≥ 22.13) before QuickJS sees it. Nothing is type-checked: types are erased, as `node --strip-types`
 * does.
 *
 * The program is the body of an async function, and a bare `return` or `await` does not parse at
 * the top of a TypeScript file, so the body is wrapped in a function for stripping and taken out
 * again. Strip mode blanks types in place (every other character keeps its position, so QuickJS's
 * line numbers stay the program's); the few constructs that need code generated (`enum`,
 * `namespace`, parameter properties) go through transform mode instead.
 *
 * What does not parse as TypeScript is passed on unchanged: it may still be JavaScript (TypeScript
 * is not a strict superset of it), and if it is not, QuickJS says why and the run ends with
 * `syntax`.
 */
import * as NodeModule from "node:module"

type Strip = (code: string, options?: { readonly mode?: "strip" | "transform" }) => string

// Looked up, not imported by name: on a Node without it the import would fail at link time, and
// programs must still run (as JavaScript).
const strip: Strip | undefined = (NodeModule as { stripTypeScriptTypes?: Strip }).stripTypeScriptTypes

const NAME = "__plugboard_program__"
const PREFIX = `async function ${NAME}() {\n`
const SUFFIX = "\n}\n"

let warned = false

// Node prints "ExperimentalWarning: stripTypeScriptTypes is an experimental feature" once per
// process, on the first call; a library must not write to its host's stderr, so that one call
// runs with that one warning filtered out (Node remembers it was emitted and never repeats it).
const quietly = <A>(f: () => A): A => {
  if (warned) return f()
  warned = true
  const emit = process.emitWarning
  const filtered = function (this: unknown, warning: string | Error, ...rest: Array<unknown>) {
    const text = typeof warning === "string" ? warning : warning.message
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: unknown } | undefined)?.type
    if (type === "ExperimentalWarning" && text.includes("stripTypeScriptTypes")) return
    return (emit as (...args: Array<unknown>) => void).call(process, warning, ...rest)
  } as typeof process.emitWarning
  process.emitWarning = filtered
  try {
    return f()
  } finally {
    if (process.emitWarning === filtered) process.emitWarning = emit
  }
}

const codeOf = (error: unknown): unknown => (error as { code?: unknown } | null)?.code

/**
 * The program as JavaScript: its types stripped when it parses as TypeScript, otherwise itself
 * (left for QuickJS to accept as JavaScript or refuse).
 */
export const toJavaScript = (code: string): string => {
  if (strip === undefined) return code
  const wrapped = PREFIX + code + SUFFIX
  try {
    const out = quietly(() => strip(wrapped, { mode: "strip" }))
    // Strip mode only blanks characters; should a future Node change that, fall back to the source.
    return out.length === wrapped.length && out.startsWith(PREFIX) && out.endsWith(SUFFIX)
      ? out.slice(PREFIX.length, out.length - SUFFIX.length)
      : code
  } catch (error) {
    if (codeOf(error) !== "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX") return code
  }
  try {
    const out = quietly(() => strip(wrapped, { mode: "transform" }))
    const open = out.indexOf("{", out.indexOf(NAME))
    const close = out.lastIndexOf("}")
    return open >= 0 && close > open ? out.slice(open + 1, close) : code
  } catch {
    return code
  }
}
