/** A local database moved aside at restore never replaces one moved aside before. */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { moveAside } from "../../src/matrix/Restore.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe("moveAside", () => {
  it("keeps every copy moved aside in the same millisecond, with its side files", () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-aside-"))
    dirs.push(dir)
    const db = join(dir, "u.sqlite")
    const now = Date.UTC(2026, 10, 22, 8, 0, 0, 123)
    const targets: Array<string> = []
    for (const generation of ["first", "second", "third"]) {
      writeFileSync(db, generation)
      writeFileSync(`${db}-wal`, `${generation} wal`)
      targets.push(moveAside(db, now))
    }
    expect(new Set(targets).size).toBe(3)
    expect(targets.map((t) => readFileSync(t, "utf8"))).toEqual(["first", "second", "third"])
    expect(targets.map((t) => readFileSync(`${t}-wal`, "utf8"))).toEqual([
      "first wal",
      "second wal",
      "third wal"
    ])
    expect(targets[0]).toMatch(/u\.sqlite\.conflict-2026-11-22T08-00-00-123Z$/)
    expect(targets[1]).toBe(`${targets[0]}-2`)
    expect(readdirSync(dir).filter((f) => f === "u.sqlite")).toEqual([])
  })
})
