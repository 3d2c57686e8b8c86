/**
 * Code mode (docs/code-mode.md): the model may answer a request of several steps with one short
 * program that calls the offered tools and returns only what matters, instead of one model call
 * per tool call with every intermediate result read twice. The rules are here, once:
 * - what a program may call: the tools offered on that model call, never a meta-tool
 *   (`callables`), each call gated as a direct call is (`target`, then `ToolCall.plan`);
 * - the typed API the model is shown, rendered from the offered tools' JSON Schemas
 *   (`api`, inside `run_code`'s description, offered only while code mode is on: `offer`);
 * - the bounds a program runs under (`DEFAULT_BOUNDS`) and what the model is told when one is
 *   exceeded or the program fails (`failure`);
 * - how a tool's answer reaches the program (`callValue`) and the program's result the model
 *   (`resultText`).
 * Running the program is an adapter's (`CodeSandbox`, e.g. `@plugboard/codemode`); running each
 * call is the door's, as for a direct call.
 */
import { Either } from "effect"
import * as Access from "./Access.js"
import type * as CodeSandbox from "./CodeSandbox.js"
import { describe } from "./Describe.js"
import type { Catalog } from "./internal/catalog/model.js"
import { META_TOOL_NAMES, RUN_CODE } from "./internal/metaTools.js"
import type { OfferedTool } from "./internal/offered.js"
import { propertyKey, typeOf } from "./internal/tsDeclarations.js"
import * as ResultPages from "./ResultPages.js"

export { RUN_CODE }

/** Whether a deployment offers code mode (`CODE_MODE`, docs/configuration.md). */
export type Setting = (typeof settings)[number]

/** Every `Setting`, for the hosts that read `CODE_MODE`. */
export const settings = ["off", "on"] as const

/**
 * What one program may spend, unless the host says otherwise. Sized for a program that loops
 * over a few dozen entities: two seconds of computing is far more than gluing tool calls takes,
 * 32 MiB holds any result worth returning, 20,000 characters is `ResultPages`' page (a result no
 * larger than a direct call's), and 25 calls stay under the turn's own `maxToolCalls`.
 */
export const DEFAULT_BOUNDS: CodeSandbox.Bounds = {
  cpuMs: 2_000,
  memoryBytes: 32 * 1024 * 1024,
  outputChars: ResultPages.DEFAULT_MAX_CHARS,
  toolCalls: 25,
  wallClockMs: 60_000
}

/** Characters of a program accepted; a longer one is refused before it runs. */
export const MAX_CODE_CHARS = 20_000

/** A tool a program may call, and where it sits under `tools`. */
export interface Callable {
  readonly ref: CodeSandbox.ToolRef
  readonly tool: OfferedTool
}

/** The namespace a tool sits in: its plugin's name as an identifier (`client` for a tool without one). */
export const namespaceOf = (tool: OfferedTool): string => {
  const name = (tool.plugin ?? "client").replace(/[^A-Za-z0-9_$]/g, "_")
  return /^[0-9]/.test(name) ? `_${name}` : name
}

/** How a program reaches `ref`: `tools.weather.get_current_weather`, `tools["my-tool"]` quoted. */
export const pathOf = (ref: CodeSandbox.ToolRef): string => {
  const step = (key: string) => {
    const written = propertyKey(key)
    return written === key ? `.${key}` : `[${written}]`
  }
  return `tools${step(ref.namespace)}${step(ref.name)}`
}

/** Every tool of an offer a program may call, in offer order: all but the meta-tools. */
export const callables = (offered: ReadonlyArray<OfferedTool>): ReadonlyArray<Callable> =>
  offered
    .filter((t) => t.kind !== "meta" && !META_TOOL_NAMES.includes(t.name))
    .map((tool) => ({ ref: { namespace: namespaceOf(tool), name: tool.name }, tool }))

/**
 * The functions a program finds under `tools`: the offered ones (`callables`, the API the model
 * reads), then every other tool of a plugin the user may load, under its plugin's namespace. A call
 * to one of those reaches the gate like a direct call to it, and gets core's answer (load the
 * plugin first) rather than a JavaScript `TypeError`. Silent tools and what the user's grants hide
 * are never there: a program cannot find, by walking `tools`, a name the model could not list.
 */
export const reachable = (
  catalog: Catalog,
  offered: ReadonlyArray<OfferedTool>,
  view: Access.View = Access.view(catalog)
): ReadonlyArray<CodeSandbox.ToolRef> => {
  const refs = callables(offered).map((c) => c.ref)
  const seen = new Set(refs.map((r) => r.name))
  for (const entry of catalog.entries) {
    if (!entry.discoverable || view.denied.has(entry.name)) continue
    for (const tool of entry.tools) {
      if (tool.visibility === "silent" || view.hiddenTools.has(tool.name) || seen.has(tool.name)) continue
      seen.add(tool.name)
      refs.push({ namespace: namespaceOf({ ...tool, kind: "plugin" }), name: tool.name })
    }
  }
  return refs
}

/**
 * The typed API of `callables` as TypeScript declarations, grouped by namespace in offer order:
 * what `run_code`'s description shows the model. Signatures only: every callable tool is offered
 * beside `run_code` with its own description, so repeating it here would pay for it twice on every
 * model call. Every function answers `Promise<unknown>`: a tool's output has no schema (its text
 * is parsed as JSON when it is JSON: `callValue`).
 */
export const api = (tools: ReadonlyArray<Callable>): string => {
  const byNamespace = new Map<string, Array<Callable>>()
  for (const c of tools) {
    const group = byNamespace.get(c.ref.namespace)
    if (group === undefined) byNamespace.set(c.ref.namespace, [c])
    else group.push(c)
  }
  const lines = ["declare const tools: {"]
  for (const [namespace, group] of byNamespace) {
    lines.push(`  ${propertyKey(namespace)}: {`)
    for (const { ref, tool } of group)
      lines.push(`    ${propertyKey(ref.name)}(input: ${typeOf(tool.parameters)}): Promise<unknown>`)
    lines.push("  }")
  }
  lines.push("}")
  return lines.join("\n")
}

/** What `run_code`'s description says before the API (the rules a program runs under). */
export const PREAMBLE =
  "Run a JavaScript or TypeScript program that calls the tools below (each described as offered) and returns only what the " +
  "user needs: use it when a request takes several tool calls. The code is the body of an async " +
  "function: await the tools, `return` the result; console.log is kept too. Each tool answers its " +
  "output (parsed JSON, or text) and throws on failure. No network, files, timers or imports."

/** `run_code` as offered for `tools` (`callables` of the offer), or `undefined` when none can be called. */
export const definition = (tools: ReadonlyArray<Callable>): OfferedTool | undefined =>
  tools.length === 0
    ? undefined
    : {
        name: RUN_CODE,
        description: `${PREAMBLE}\n\n${api(tools)}`,
        parameters: {
          type: "object",
          properties: { code: { type: "string" } },
          required: ["code"]
        },
        kind: "meta"
      }

/**
 * What code mode adds to an offer: `run_code` over its callable tools when code mode is on and
 * there is one, nothing otherwise. Pass it last in `Offer.offer`'s `extra`: its description grows
 * with each load, so it must not move what precedes it (the provider's cached prefix).
 */
export const offer = (setting: Setting, offered: ReadonlyArray<OfferedTool>): ReadonlyArray<OfferedTool> => {
  if (setting !== "on") return []
  const tool = definition(callables(offered))
  return tool === undefined ? [] : [tool]
}

/** A `run_code` call's arguments checked: the program, or what the model is told (`Left`). */
export const decodeInput = (args: unknown): Either.Either<string, string> => {
  const usage = `Call ${RUN_CODE} with {"code": "<the body of an async function>"}.`
  if (typeof args !== "object" || args === null || Array.isArray(args))
    return Either.left(`${RUN_CODE} expects an object of arguments, got ${describe(args)}. ${usage}`)
  const code = (args as { code?: unknown }).code
  if (typeof code !== "string") return Either.left(`${RUN_CODE} needs "code", a string. ${usage}`)
  if (code.trim() === "") return Either.left(`${RUN_CODE} was given an empty program. ${usage}`)
  if (code.length > MAX_CODE_CHARS)
    return Either.left(
      `The program is ${code.length.toLocaleString("en-US")} characters, over the limit of ${MAX_CODE_CHARS.toLocaleString("en-US")}. Write a shorter one.`
    )
  return Either.right(code)
}

/**
 * The tool name a program's call `tools[namespace][name](…)` asks for, to be gated as a direct
 * call (`ToolCall.plan`), or what the program is told (`Left`): a meta-tool is never callable
 * from a program, and an offered tool reached under another namespace is told where it is. A name
 * that is not offered at all goes to the gate, whose message says why (not loaded, not granted,
 * unknown).
 */
export const target = (
  tools: ReadonlyArray<Callable>,
  ref: CodeSandbox.ToolRef
): Either.Either<string, string> => {
  if (META_TOOL_NAMES.includes(ref.name))
    return Either.left(
      `'${ref.name}' is a meta-tool: a program can call only the tools listed under \`tools\`.`
    )
  const offered = tools.find((c) => c.ref.name === ref.name)
  if (offered !== undefined && offered.ref.namespace !== ref.namespace)
    return Either.left(`tools.${ref.namespace} has no ${ref.name}; it is ${pathOf(offered.ref)}.`)
  return Either.right(ref.name)
}

/** A tool's answer as the program receives it: its JSON value when the text is JSON, else the text. */
export const callValue = (text: string): unknown => {
  const trimmed = text.trim()
  if (trimmed === "" || !/^[[{"\d-]|^(true|false|null)$/.test(trimmed)) return text
  try {
    return JSON.parse(trimmed)
  } catch {
    return text
  }
}

/** A program's result as the model is answered with it: its logs, then its value as JSON. */
export const resultText = (result: CodeSandbox.RunResult): string => {
  const value =
    result.value === undefined
      ? "The program returned nothing."
      : typeof result.value === "string"
        ? result.value
        : JSON.stringify(result.value)
  if (result.logs.length === 0) return value
  return `Logs:\n${result.logs.join("\n")}\n\nResult:\n${value}`
}

const count = (n: number): string => n.toLocaleString("en-US")

/** What the model is told when a program ended without a result, by reason. */
export const failure = (error: CodeSandbox.CodeSandboxError, bounds: CodeSandbox.Bounds): string => {
  switch (error.reason) {
    case "syntax":
      return `The program does not parse: ${error.message}. Fix it and call ${RUN_CODE} again.`
    case "thrown":
      return `The program failed: ${error.message}`
    case "cpu-time":
      return `The program was stopped: it computed for more than ${count(bounds.cpuMs)} ms (the CPU bound). Do less work in it.`
    case "memory":
      return `The program was stopped: it used more than ${count(bounds.memoryBytes)} bytes of memory (the memory bound).`
    case "output":
      return `The program was stopped: its result or logs are longer than ${count(bounds.outputChars)} characters (the output bound). Return only what the user needs.`
    case "tool-calls":
      return `The program was stopped: it made more than ${count(bounds.toolCalls)} tool calls (the call bound). Call fewer tools, or answer with what you have.`
    case "wall-clock":
      return `The program was stopped: it ran for more than ${count(bounds.wallClockMs)} ms (the time bound).`
    case "aborted":
      return "The program was stopped: the turn was aborted."
    case "unavailable":
      return `Code mode is unavailable on this server: ${error.message}. Call the tools directly.`
  }
}
