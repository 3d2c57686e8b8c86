/**
 * Reading what a server answers, field by field: the SDK's strict schemas would refuse a whole
 * answer for one bad part (one broken tool in a list), so answers are taken as JSON objects and
 * checked here (`Results.ts` does the same for call results).
 */
import type { StandardSchemaV1 } from "@modelcontextprotocol/client"
import type { McpToolDescription } from "../../Types.js"

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Reads one listed tool defensively: the SDK's own result schema would refuse the whole list
 * for one bad tool, and a server with one broken tool should still offer the others.
 */
export const readTool = (raw: unknown): McpToolDescription | string => {
  if (!isRecord(raw)) return "a tool that is not an object"
  const name = raw.name
  if (typeof name !== "string" || name.trim() === "") return "a tool without a name"
  if (!isRecord(raw.inputSchema)) return `tool '${name}' without an inputSchema object`
  return {
    name,
    ...(typeof raw.title === "string" ? { title: raw.title } : {}),
    ...(typeof raw.description === "string" ? { description: raw.description } : {}),
    inputSchema: raw.inputSchema,
    ...(isRecord(raw.annotations) && raw.annotations.destructiveHint === true
      ? { destructiveHint: true }
      : {})
  }
}

/**
 * How long a listing stays fresh, and who may share it (2026-07-28 `ttlMs`, `cacheScope`):
 * `public` may serve any user, `private` only the authorization context that listed it.
 */
export interface ListHints {
  readonly ttlMs?: number | undefined
  readonly cacheScope?: "public" | "private" | undefined
}

/** The hints of a list result; a field of the wrong type is left out (as absent). */
export const readHints = (result: Record<string, unknown>): ListHints => {
  const { ttlMs, cacheScope } = result
  return {
    ...(typeof ttlMs === "number" && Number.isFinite(ttlMs) && ttlMs >= 0 ? { ttlMs } : {}),
    ...(cacheScope === "public" || cacheScope === "private" ? { cacheScope } : {})
  }
}

/** Any JSON object as a result: `Results.toToolOutput` and `listTools` check each field themselves. */
export const anyResult: StandardSchemaV1<unknown, Record<string, unknown>> = {
  "~standard": {
    version: 1,
    vendor: "plugboard",
    validate: (value) =>
      isRecord(value) ? { value } : { issues: [{ message: "The result is not a JSON object." }] }
  }
}
