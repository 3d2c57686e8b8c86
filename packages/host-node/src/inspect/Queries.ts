/**
 * The `--queries` file: JSON Lines, one `{"query": "...", "plugin": "..."}` object per line;
 * blank lines are skipped. The first malformed line stops the run with its line number, so a
 * broken file never yields figures over part of it.
 */
import { readFileSync } from "node:fs"
import type { RoutingEval } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { Data } from "effect"

/** The file cannot be read, or a line is not a labelled query. */
export class QueriesFileError extends Data.TaggedError("QueriesFileError")<{
  readonly reason: "unreadable" | "malformed"
  readonly message: string
}> {
  // Thrown to `inspect`'s plain code: a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
  constructor(reason: QueriesFileError["reason"], message: string) {
    super({ reason, message })
  }
}

const excerpt = (line: string): string => (line.length > 80 ? `${line.slice(0, 77)}...` : line)

/** A labelled query with the 1-based line it was read from. */
export interface QueryLine extends RoutingEval.LabelledQuery {
  readonly line: number
}

/** Parses the text of a queries file; `file` names it in errors. Throws `QueriesFileError`. */
export const parseQueries = (text: string, file: string): Array<QueryLine> => {
  const out: Array<QueryLine> = []
  const lines = text.split(/\r?\n/)
  lines.forEach((raw, i) => {
    const line = raw.trim()
    if (line.length === 0) return
    const where = `${file}:${i + 1}`
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch (thrown) {
      const why = describe(thrown)
      throw new QueriesFileError("malformed", `${where}: not valid JSON (${why}): ${excerpt(line)}`)
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new QueriesFileError("malformed", `${where}: expected an object {"query": ..., "plugin": ...}.`)
    }
    const { query, plugin } = value as Record<string, unknown>
    for (const [field, v] of [
      ["query", query],
      ["plugin", plugin]
    ] as const) {
      if (typeof v !== "string" || v.trim().length === 0) {
        throw new QueriesFileError(
          "malformed",
          `${where}: field '${field}' must be a non-empty string (got ${v === undefined ? "nothing" : JSON.stringify(v)}).`
        )
      }
    }
    out.push({ query: query as string, plugin: (plugin as string).trim(), line: i + 1 })
  })
  if (out.length === 0) throw new QueriesFileError("malformed", `${file}: no queries (the file is empty).`)
  return out
}

/** Reads and parses a queries file. Throws `QueriesFileError`. */
export const readQueries = (path: string, shownAs: string): Array<QueryLine> => {
  let text: string
  try {
    text = readFileSync(path, "utf8")
  } catch (thrown) {
    const code = (thrown as { code?: string }).code
    throw new QueriesFileError(
      "unreadable",
      `Cannot read queries file '${shownAs}'${code === "ENOENT" ? ": no such file" : code === "EISDIR" ? ": it is a folder" : ""}.`
    )
  }
  return parseQueries(text, shownAs)
}
