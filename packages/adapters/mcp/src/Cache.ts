/**
 * What each MCP server said about itself, kept on disk so that a restart, `inspect` and CI build
 * the catalog without spawning every server. An entry is valid for the config that fetched it:
 * its key hashes what decides which server answers (the transport: command, args, env, cwd, or
 * url and headers), not what plugboard does with the answer (manifest, tool policy, timeout), so
 * editing an override never refetches and changing an argument always does.
 *
 * A list a 2026-07-28 server gave a `ttlMs` does not outlive it on disk either: the entry records
 * when it expires, and an expired entry is no hit (the server is asked again) but still the
 * fallback when the server cannot answer (docs/mounting.md#protocol-revisions). A 2025 server's
 * list carries no ttl and stays until its config changes or `--refresh`.
 *
 * A cache is never a reason to fail: a file that is corrupt, unreadable, from another version or
 * for another config is treated as absent (with a warning naming it) and replaced at the next
 * successful fetch.
 */
import { createHash, randomBytes } from "node:crypto"
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { describe, isPluginName } from "@plugboard/core"
import { MAX_LIST_TTL_MS } from "./Listings.js"
import type { McpDescription, McpServerConfig, McpToolDescription } from "./Types.js"

/** The cache directory a host uses unless told otherwise (relative to its working directory). */
export const DEFAULT_CACHE_DIR = ".plugboard/mcp-cache"

/** The format of an entry; a file of another version is ignored. */
export const CACHE_VERSION = 1

/** One file of the cache. Holds no header or env value: the key is a hash. */
export interface CacheEntry {
  readonly version: typeof CACHE_VERSION
  /** {@link cacheKey} of the config that fetched it. */
  readonly key: string
  readonly name: string
  /** ISO 8601. */
  readonly fetchedAt: string
  /** ISO 8601: `fetchedAt` plus the list's `ttlMs`, when the server gave one. */
  readonly expiresAt?: string | undefined
  readonly description: McpDescription
}

/** The result of {@link read}: the entry when usable, else why not (absent gives neither). */
export interface CacheRead {
  readonly entry?: CacheEntry | undefined
  /** Why a file that exists was not used; names the file. */
  readonly warning?: string | undefined
  /** The entry's `expiresAt` has passed: ask the server, and keep the entry as the fallback. */
  readonly expired?: boolean | undefined
}

/** JSON with object keys sorted at every level, so equal configs hash equally whatever their order. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>
    return `{${Object.keys(record)
      .filter((k) => record[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(record[k])}`)
      .join(",")}}`
  }
  return JSON.stringify(value)
}

/**
 * The key of a server's entry: sha256 (hex) of the canonical JSON of its transport. Secrets in
 * env or headers reach the file only through this one-way hash.
 */
export const cacheKey = (server: McpServerConfig): string => {
  const t = server.transport
  const identity =
    t.kind === "stdio"
      ? { kind: t.kind, command: t.command, args: t.args, env: t.env, cwd: t.cwd ?? null }
      : { kind: t.kind, url: t.url, headers: t.headers }
  return createHash("sha256")
    .update(canonical({ v: CACHE_VERSION, transport: identity }))
    .digest("hex")
}

/**
 * The file of a server's entry. Server names are kebab-case (a config checked by `Config.parse`
 * has no other), which keeps them inside the directory; any other name is refused.
 */
export const cacheFile = (cacheDir: string, serverName: string): string => {
  if (!isPluginName(serverName)) {
    throw new TypeError(`MCP server name '${serverName}' is not kebab-case; it cannot name a cache file.`)
  }
  return join(cacheDir, `${serverName}.json`)
}

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const optionalString = (u: unknown): boolean => u === undefined || typeof u === "string"

const isTool = (u: unknown): u is McpToolDescription =>
  isRecord(u) &&
  typeof u.name === "string" &&
  optionalString(u.title) &&
  optionalString(u.description) &&
  isRecord(u.inputSchema) &&
  (u.destructiveHint === undefined || typeof u.destructiveHint === "boolean")

/** True for a value in the shape of a description (what a file must hold to be used). */
const isDescription = (u: unknown): u is McpDescription =>
  isRecord(u) &&
  isRecord(u.serverInfo) &&
  typeof u.serverInfo.name === "string" &&
  optionalString(u.serverInfo.title) &&
  optionalString(u.serverInfo.version) &&
  optionalString(u.instructions) &&
  optionalString(u.protocolVersion) &&
  (u.ttlMs === undefined || (typeof u.ttlMs === "number" && u.ttlMs >= 0)) &&
  (u.cacheScope === undefined || u.cacheScope === "public" || u.cacheScope === "private") &&
  Array.isArray(u.tools) &&
  u.tools.every(isTool)

/**
 * Reads a server's entry. Absent: `{}`. Present but unusable (not JSON, not an entry, another
 * version, another config's key, another server's name): `{ warning }`. Never throws.
 */
export const read = async (
  cacheDir: string,
  server: McpServerConfig,
  now: Date = new Date()
): Promise<CacheRead> => {
  if (!isPluginName(server.name)) {
    return { warning: `MCP server name '${server.name}' is not kebab-case; it is not cached.` }
  }
  const file = cacheFile(cacheDir, server.name)
  let text: string
  try {
    text = await readFile(file, "utf8")
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "ENOENT") return {}
    return { warning: `The MCP cache file ${file} cannot be read and is ignored: ${describe(cause)}` }
  }
  const ignored = (why: string): CacheRead => ({
    warning: `The MCP cache file ${file} ${why}; it is ignored and will be replaced.`
  })
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return ignored("is not valid JSON")
  }
  if (!isRecord(value)) return ignored("is not a cache entry")
  if (value.version !== CACHE_VERSION)
    return ignored(`is of format version ${String(value.version)}, not ${CACHE_VERSION}`)
  if (value.key !== cacheKey(server))
    return ignored(`was fetched with another config of server '${server.name}'`)
  if (
    value.name !== server.name ||
    typeof value.fetchedAt !== "string" ||
    !optionalString(value.expiresAt) ||
    !isDescription(value.description)
  ) {
    return ignored("is not a complete cache entry")
  }
  const entry = value as unknown as CacheEntry
  const expires = entry.expiresAt === undefined ? Number.NaN : Date.parse(entry.expiresAt)
  return now.getTime() >= expires ? { entry, expired: true } : { entry }
}

/** Only the fields of a description, so nothing else a server sent is written to disk. */
const pick = (d: McpDescription): McpDescription => ({
  serverInfo: {
    name: d.serverInfo.name,
    ...(d.serverInfo.title === undefined ? {} : { title: d.serverInfo.title }),
    ...(d.serverInfo.version === undefined ? {} : { version: d.serverInfo.version })
  },
  ...(d.instructions === undefined ? {} : { instructions: d.instructions }),
  ...(d.protocolVersion === undefined ? {} : { protocolVersion: d.protocolVersion }),
  ...(d.ttlMs === undefined ? {} : { ttlMs: d.ttlMs }),
  ...(d.cacheScope === undefined ? {} : { cacheScope: d.cacheScope }),
  tools: d.tools.map((t) => ({
    name: t.name,
    ...(t.title === undefined ? {} : { title: t.title }),
    ...(t.description === undefined ? {} : { description: t.description }),
    inputSchema: t.inputSchema,
    ...(t.destructiveHint === true ? { destructiveHint: true } : {})
  }))
})

/**
 * Writes a server's entry atomically: to a temporary file in the same directory, then renamed
 * over the old one, so a reader (another host booting, a crash mid-write) sees the old entry or
 * the new one, never half of either. Rejects when the directory cannot be written (or the name
 * is not kebab-case).
 */
export const write = async (
  cacheDir: string,
  server: McpServerConfig,
  description: McpDescription,
  now: Date = new Date()
): Promise<CacheEntry> => {
  const entry: CacheEntry = {
    version: CACHE_VERSION,
    key: cacheKey(server),
    name: server.name,
    fetchedAt: now.toISOString(),
    ...(description.ttlMs === undefined
      ? {}
      : { expiresAt: new Date(now.getTime() + Math.min(description.ttlMs, MAX_LIST_TTL_MS)).toISOString() }),
    description: pick(description)
  }
  await mkdir(cacheDir, { recursive: true })
  const file = cacheFile(cacheDir, server.name)
  const temp = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`
  try {
    await writeFile(temp, `${JSON.stringify(entry, null, 2)}\n`, "utf8")
    await rename(temp, file)
  } catch (cause) {
    await rm(temp, { force: true }).catch(() => {})
    throw cause
  }
  return entry
}
