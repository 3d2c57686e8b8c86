/**
 * The MCP config file, in the shape MCP clients already use (`{"mcpServers": {"<name>": ...}}`),
 * so an operator can point plugboard at the file they already have. plugboard's own keys per
 * server (`manifest`, `tools`, `timeoutMs`, `forwardUcan`, `auth`) sit beside the standard ones. Every
 * problem is reported with the key path it is at, all at once: a boot that stops on a bad file
 * should say everything wrong with it in one go, not one error per restart.
 */
import { readFile as readText } from "node:fs/promises"
import { dirname, isAbsolute, resolve } from "node:path"
import { type CatalogSource, describe, isPluginName, Visibility } from "@plugboard/core"
import { parseAuth } from "./oauth/ServerAuth.js"
import type { ForwardUcan, McpServerConfig, McpTransportConfig } from "./Types.js"

/** The default bound on a server's boot listing and on each of its calls. */
export const DEFAULT_TIMEOUT_MS = 30_000

/** The default header of a forwarded invocation (sent as `Bearer <invocation>`). */
export const DEFAULT_UCAN_HEADER = "Authorization"

/** The servers of a config, and what is wrong with it. */
export interface ParsedConfig {
  /** The enabled servers without errors, in the file's order. */
  readonly servers: ReadonlyArray<McpServerConfig>
  /** Hard problems (each names its key path); a host stops boot on any. */
  readonly errors: ReadonlyArray<string>
  /** Soft ones: unknown keys, ignored. */
  readonly warnings: ReadonlyArray<string>
}

/** Options of {@link parse}. */
export interface ParseOptions {
  /** The file the value came from, named in messages. */
  readonly file?: string | undefined
  /** What a relative `cwd` is relative to (the config file's folder); default the process's. */
  readonly baseDir?: string | undefined
}

const TOP_KEYS = ["mcpServers"] as const
const COMMON_KEYS = ["type", "manifest", "tools", "timeoutMs", "disabled"] as const
const STDIO_KEYS = ["command", "args", "env", "cwd"] as const
const HTTP_KEYS = ["url", "headers", "forwardUcan", "auth"] as const
const SERVER_KEYS: ReadonlySet<string> = new Set([...COMMON_KEYS, ...STDIO_KEYS, ...HTTP_KEYS])
const TOOLS_KEYS: ReadonlySet<string> = new Set(["allow", "deny", "visibility"])
const FORWARD_KEYS: ReadonlySet<string> = new Set(["audience", "header"])

// The `type` values MCP clients write; the deprecated SSE transport is refused by name below.
const STDIO_TYPES = new Set(["stdio"])
const HTTP_TYPES = new Set(["http", "streamable-http", "streamableHttp"])

// RFC 9110 token: what an HTTP header name may be.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const kindOf = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "a list" : typeof u)

/**
 * Checks a parsed config value. Never throws: a server with an error is left out of `servers`
 * and its errors are listed; a `"disabled": true` server is skipped without being checked
 * further, as MCP clients do.
 */
export const parse = (value: unknown, options: ParseOptions = {}): ParsedConfig => {
  const errors: string[] = []
  const warnings: string[] = []
  const servers: McpServerConfig[] = []
  const inFile = options.file === undefined ? "" : ` (in ${options.file})`
  if (!isRecord(value)) {
    errors.push(
      `The MCP config${inFile} must be a JSON object with an 'mcpServers' object, not ${kindOf(value)}.`
    )
    return { servers, errors, warnings }
  }
  for (const key of Object.keys(value)) {
    if (!(TOP_KEYS as ReadonlyArray<string>).includes(key)) {
      warnings.push(
        `${key}${inFile} is not a known key of the MCP config and is ignored (known: mcpServers).`
      )
    }
  }
  const all = value.mcpServers
  if (all === undefined) {
    errors.push(`The MCP config${inFile} has no 'mcpServers' object.`)
    return { servers, errors, warnings }
  }
  if (!isRecord(all)) {
    errors.push(`mcpServers${inFile} must be an object of servers by name, not ${kindOf(all)}.`)
    return { servers, errors, warnings }
  }
  const baseDir = options.baseDir ?? process.cwd()
  for (const [name, raw] of Object.entries(all)) {
    const at = `mcpServers.${name}`
    const serverErrors: string[] = []
    const server = parseServer(name, raw, at, baseDir, serverErrors, warnings)
    errors.push(...serverErrors.map((e) => (inFile === "" ? e : `${e.replace(/\.$/, "")}${inFile}.`)))
    if (server !== undefined && serverErrors.length === 0) servers.push(server)
  }
  return { servers, errors, warnings }
}

const parseServer = (
  name: string,
  raw: unknown,
  at: string,
  baseDir: string,
  errors: string[],
  warnings: string[]
): McpServerConfig | undefined => {
  if (!isRecord(raw)) {
    errors.push(`${at} must be an object, not ${kindOf(raw)}.`)
    return undefined
  }
  if (raw.disabled !== undefined && typeof raw.disabled !== "boolean") {
    errors.push(`${at}.disabled must be true or false.`)
    return undefined
  }
  if (raw.disabled === true) return undefined
  if (!isPluginName(name)) {
    errors.push(
      `${at}: the server's name is its plugin's name and must be kebab-case (lowercase letters, digits and '-', starting with a letter), e.g. '${suggestName(name)}'.`
    )
  }
  for (const key of Object.keys(raw)) {
    if (!SERVER_KEYS.has(key)) {
      warnings.push(
        `${at}.${key} is not a known key and is ignored (known: ${[...COMMON_KEYS, ...STDIO_KEYS, ...HTTP_KEYS].join(", ")}).`
      )
    }
  }
  const transport = parseTransport(raw, at, baseDir, errors)
  const manifest = raw.manifest
  if (manifest !== undefined && !isRecord(manifest)) {
    errors.push(`${at}.manifest must be an object of manifest fields, not ${kindOf(manifest)}.`)
  }
  const tools = raw.tools === undefined ? undefined : parseTools(raw.tools, `${at}.tools`, errors, warnings)
  let timeoutMs = DEFAULT_TIMEOUT_MS
  if (raw.timeoutMs !== undefined) {
    if (typeof raw.timeoutMs !== "number" || !Number.isSafeInteger(raw.timeoutMs) || raw.timeoutMs <= 0) {
      errors.push(`${at}.timeoutMs must be a positive whole number of milliseconds.`)
    } else timeoutMs = raw.timeoutMs
  }
  const forwardUcan = parseForwardUcan(raw.forwardUcan, transport, at, errors, warnings)
  const oauth = parseAuth(
    raw.auth,
    { transport, forwardUcan: raw.forwardUcan !== undefined && raw.forwardUcan !== false },
    at,
    errors,
    warnings
  )
  if (transport === undefined) return undefined
  return {
    name,
    transport,
    ...(manifest === undefined ? {} : { manifest }),
    ...(tools === undefined ? {} : { tools }),
    timeoutMs,
    ...(forwardUcan === undefined ? {} : { forwardUcan }),
    ...(oauth === undefined ? {} : { oauth })
  }
}

const suggestName = (name: string): string =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^[^a-z]+|-+$/g, "") || "my-server"

const parseTransport = (
  raw: Record<string, unknown>,
  at: string,
  baseDir: string,
  errors: string[]
): McpTransportConfig | undefined => {
  const hasCommand = raw.command !== undefined
  const hasUrl = raw.url !== undefined
  if (hasCommand && hasUrl) {
    errors.push(`${at}: give either 'command' (stdio) or 'url' (HTTP), not both.`)
    return undefined
  }
  if (!hasCommand && !hasUrl) {
    errors.push(`${at}: give either 'command' (a stdio server to start) or 'url' (an HTTP server to reach).`)
    return undefined
  }
  const type = raw.type
  if (type !== undefined) {
    if (type === "sse") {
      errors.push(
        `${at}.type 'sse' is the deprecated HTTP+SSE transport, which plugboard does not speak; use the server's Streamable HTTP endpoint ('http').`
      )
    } else if (typeof type !== "string" || !(STDIO_TYPES.has(type) || HTTP_TYPES.has(type))) {
      errors.push(`${at}.type must be 'stdio' or 'http'.`)
    } else if (hasCommand && !STDIO_TYPES.has(type)) {
      errors.push(`${at}.type '${type}' does not fit 'command', which starts a stdio server.`)
    } else if (hasUrl && !HTTP_TYPES.has(type)) {
      errors.push(`${at}.type '${type}' does not fit 'url', which reaches an HTTP server.`)
    }
  }
  const before = errors.length
  if (hasCommand) {
    for (const key of ["url", "headers"]) {
      if (raw[key] !== undefined) errors.push(`${at}.${key} is for HTTP servers ('url'), not with 'command'.`)
    }
    if (typeof raw.command !== "string" || raw.command.trim().length === 0) {
      errors.push(`${at}.command must be a non-empty string.`)
    }
    const args = stringList(raw.args, `${at}.args`, errors)
    const env = stringRecord(raw.env, `${at}.env`, errors)
    let cwd: string | undefined
    if (raw.cwd !== undefined) {
      if (typeof raw.cwd !== "string" || raw.cwd.length === 0)
        errors.push(`${at}.cwd must be a non-empty string.`)
      else cwd = isAbsolute(raw.cwd) ? raw.cwd : resolve(baseDir, raw.cwd)
    }
    if (errors.length > before) return undefined
    return { kind: "stdio", command: raw.command as string, args, env, ...(cwd === undefined ? {} : { cwd }) }
  }
  for (const key of STDIO_KEYS) {
    if (key !== "command" && raw[key] !== undefined) {
      errors.push(`${at}.${key} is for stdio servers ('command'), not with 'url'.`)
    }
  }
  let url: string | undefined
  if (typeof raw.url !== "string") errors.push(`${at}.url must be a string.`)
  else {
    let parsed: URL | undefined
    try {
      parsed = new URL(raw.url)
    } catch {
      errors.push(`${at}.url '${raw.url}' is not a URL.`)
    }
    if (parsed !== undefined) {
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
        errors.push(`${at}.url must be an http: or https: URL, not ${parsed.protocol}.`)
      } else url = raw.url
    }
  }
  const headers = stringRecord(raw.headers, `${at}.headers`, errors)
  for (const [header, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(header)) errors.push(`${at}.headers: '${header}' is not a valid HTTP header name.`)
    if (/[\r\n\0]/.test(value)) errors.push(`${at}.headers.${header} must not contain line breaks.`)
  }
  if (errors.length > before || url === undefined) return undefined
  return { kind: "http", url, headers }
}

const stringList = (value: unknown, at: string, errors: string[]): ReadonlyArray<string> => {
  if (value === undefined) return []
  if (!Array.isArray(value)) {
    errors.push(`${at} must be a list of strings, not ${kindOf(value)}.`)
    return []
  }
  value.forEach((item, i) => {
    if (typeof item !== "string") errors.push(`${at}[${i}] must be a string, not ${kindOf(item)}.`)
  })
  return value.filter((item): item is string => typeof item === "string")
}

const stringRecord = (value: unknown, at: string, errors: string[]): Readonly<Record<string, string>> => {
  if (value === undefined) return {}
  if (!isRecord(value)) {
    errors.push(`${at} must be an object of strings, not ${kindOf(value)}.`)
    return {}
  }
  const out: Record<string, string> = {}
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== "string") errors.push(`${at}.${key} must be a string, not ${kindOf(item)}.`)
    else out[key] = item
  }
  return out
}

const parseTools = (
  value: unknown,
  at: string,
  errors: string[],
  warnings: string[]
): CatalogSource.ToolPolicy | undefined => {
  if (!isRecord(value)) {
    errors.push(`${at} must be an object (allow, deny, visibility), not ${kindOf(value)}.`)
    return undefined
  }
  for (const key of Object.keys(value)) {
    if (!TOOLS_KEYS.has(key))
      warnings.push(`${at}.${key} is not a known key and is ignored (known: allow, deny, visibility).`)
  }
  const allow = value.allow === undefined ? undefined : stringList(value.allow, `${at}.allow`, errors)
  const deny = value.deny === undefined ? undefined : stringList(value.deny, `${at}.deny`, errors)
  let visibility: Record<string, Visibility> | undefined
  if (value.visibility !== undefined) {
    if (!isRecord(value.visibility)) {
      errors.push(
        `${at}.visibility must be an object of tool name to visibility, not ${kindOf(value.visibility)}.`
      )
    } else {
      visibility = {}
      for (const [tool, v] of Object.entries(value.visibility)) {
        if (!Visibility.literals.includes(v as never)) {
          errors.push(`${at}.visibility.${tool} must be one of ${Visibility.literals.join(", ")}.`)
        } else visibility[tool] = v as Visibility
      }
    }
  }
  return {
    ...(allow === undefined ? {} : { allow }),
    ...(deny === undefined ? {} : { deny }),
    ...(visibility === undefined ? {} : { visibility })
  }
}

const parseForwardUcan = (
  value: unknown,
  transport: McpTransportConfig | undefined,
  at: string,
  errors: string[],
  warnings: string[]
): ForwardUcan | undefined => {
  if (value === undefined || value === false) return undefined
  const where = `${at}.forwardUcan`
  if (value !== true && !isRecord(value)) {
    errors.push(`${where} must be true, false or an object (audience, header), not ${kindOf(value)}.`)
    return undefined
  }
  if (transport?.kind === "stdio") {
    // A stdio server has no request headers to carry an invocation, and one process serves all users.
    errors.push(`${where} is only for HTTP servers ('url'): a stdio server has no per-request headers.`)
    return undefined
  }
  let audience: string | undefined
  let header = DEFAULT_UCAN_HEADER
  if (isRecord(value)) {
    for (const key of Object.keys(value)) {
      if (!FORWARD_KEYS.has(key))
        warnings.push(`${where}.${key} is not a known key and is ignored (known: audience, header).`)
    }
    if (value.audience !== undefined) {
      if (typeof value.audience !== "string" || !/^did:[a-z0-9]+:\S+$/.test(value.audience)) {
        errors.push(`${where}.audience must be a DID (did:method:...).`)
      } else audience = value.audience
    }
    if (value.header !== undefined) {
      if (typeof value.header !== "string" || !HEADER_NAME.test(value.header)) {
        errors.push(`${where}.header must be an HTTP header name.`)
      } else header = value.header
    }
  }
  if (transport?.kind === "http") {
    const clash = Object.keys(transport.headers).find((h) => h.toLowerCase() === header.toLowerCase())
    if (clash !== undefined) {
      errors.push(
        `${where} sends each user's invocation in '${header}', which ${at}.headers.${clash} also sets; drop one of them.`
      )
    }
  }
  return { ...(audience === undefined ? {} : { audience }), header }
}

/**
 * Reads and checks a config file. A file that cannot be read or is not JSON is an error naming
 * the file (and, for bad JSON, the line and column), never a throw; a relative `cwd` is taken
 * relative to the file's folder.
 */
export const readFile = async (path: string): Promise<ParsedConfig> => {
  let text: string
  try {
    text = await readText(path, "utf8")
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code
    return {
      servers: [],
      errors: [
        code === "ENOENT"
          ? `The MCP config ${path} does not exist.`
          : `The MCP config ${path} cannot be read: ${describe(cause)}.`
      ],
      warnings: []
    }
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (cause) {
    return { servers: [], errors: [jsonError(path, text, cause)], warnings: [] }
  }
  return parse(value, { file: path, baseDir: dirname(resolve(path)) })
}

/** `<file>:<line>:<column>: ...`, the position found by {@link syntaxErrorAt}. */
const jsonError = (path: string, text: string, cause: unknown): string => {
  const offset = syntaxErrorAt(text)
  let line = 1
  let column = 1
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === "\n") {
      line++
      column = 1
    } else column++
  }
  // V8's message may quote the file's text (which can hold secrets): keep only its reason.
  const reason = describe(cause)
    .replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, "")
    .replace(/ in JSON at position \d+.*$/s, "")
    .replace(/^Unexpected token '([^{}[\],:"])'/, "Unexpected character")
  return `${path}:${line}:${column}: the MCP config is not valid JSON (${reason}).`
}

/**
 * Where the first JSON syntax error of `text` is (a character offset). V8's messages give a
 * position for most errors but not all ("Unexpected token" gives none), so the text is scanned
 * with the JSON grammar; used only once `JSON.parse` has failed.
 */
export const syntaxErrorAt = (text: string): number => {
  let i = 0
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++
  }
  const fail = (): never => {
    throw i
  }
  const literal = (word: string) => {
    for (const ch of word) {
      if (text[i] !== ch) fail()
      i++
    }
  }
  const string = () => {
    i++
    while (i < text.length) {
      const ch = text.charCodeAt(i)
      if (ch === 0x22) {
        i++
        return
      }
      if (ch < 0x20) fail()
      if (ch === 0x5c) {
        i++
        const esc = text[i]
        if (esc === "u") {
          i++
          for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] ?? "")) fail()
        } else if (esc !== undefined && '"\\/bfnrt'.includes(esc)) i++
        else fail()
      } else i++
    }
    fail()
  }
  const number = () => {
    if (text[i] === "-") i++
    if (text[i] === "0") i++
    else if (/[1-9]/.test(text[i] ?? "")) while (/[0-9]/.test(text[i] ?? "")) i++
    else fail()
    if (text[i] === ".") {
      i++
      if (!/[0-9]/.test(text[i] ?? "")) fail()
      while (/[0-9]/.test(text[i] ?? "")) i++
    }
    if (text[i] === "e" || text[i] === "E") {
      i++
      if (text[i] === "+" || text[i] === "-") i++
      if (!/[0-9]/.test(text[i] ?? "")) fail()
      while (/[0-9]/.test(text[i] ?? "")) i++
    }
  }
  const value = (): void => {
    ws()
    const ch = text[i]
    if (ch === "{") {
      i++
      ws()
      if (text[i] === "}") {
        i++
        return
      }
      for (;;) {
        ws()
        if (text[i] !== '"') fail()
        string()
        ws()
        if (text[i] !== ":") fail()
        i++
        value()
        ws()
        if (text[i] === ",") i++
        else if (text[i] === "}") {
          i++
          return
        } else fail()
      }
    } else if (ch === "[") {
      i++
      ws()
      if (text[i] === "]") {
        i++
        return
      }
      for (;;) {
        value()
        ws()
        if (text[i] === ",") i++
        else if (text[i] === "]") {
          i++
          return
        } else fail()
      }
    } else if (ch === '"') string()
    else if (ch === "t") literal("true")
    else if (ch === "f") literal("false")
    else if (ch === "n") literal("null")
    else if (ch === "-" || /[0-9]/.test(ch ?? "")) number()
    else fail()
  }
  try {
    value()
    ws()
    return Math.min(i, text.length)
  } catch (at) {
    // Anything but an offset is a nesting deeper than the stack: no position to give.
    return typeof at === "number" ? at : 0
  }
}
