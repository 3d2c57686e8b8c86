/**
 * README.md's configuration table is the server's variable list (`ServerConfig.VARIABLES`, also
 * what `plugboard --help` prints): same variables, same order, same defaults and meanings.
 * Backticks are formatting only; `\|` is a literal bar inside a cell.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { VARIABLES } from "../src/Config.js"
import { ROOT } from "./inspect/helpers.js"

const plain = (cell: string) => cell.replace(/`/g, "").replace(/\\\|/g, "|").trim()

/** The rows of the table under `| variable | default | meaning |`. */
const readmeRows = (): Array<[string, string, string]> => {
  const lines = readFileSync(join(ROOT, "README.md"), "utf8").split("\n")
  const start = lines.findIndex((l) => l.trim() === "| variable | default | meaning |")
  expect(start, "README.md has the configuration table").toBeGreaterThan(-1)
  const rows: Array<[string, string, string]> = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break
    const cells = line
      .slice(1, line.trimEnd().length - 1)
      .split(/(?<!\\)\|/)
      .map(plain)
    expect(cells, line).toHaveLength(3)
    rows.push(cells as [string, string, string])
  }
  return rows
}

describe("README configuration table", () => {
  it("lists exactly the variables the server reads, with their defaults and meanings", () => {
    const expected = VARIABLES.map((v) => [plain(v.name), plain(v.default), plain(v.meaning)])
    expect(readmeRows()).toEqual(expected)
  })
})
