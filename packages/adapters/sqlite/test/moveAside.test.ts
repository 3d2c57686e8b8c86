/**
 * Moving a database aside loses nothing: every copy keeps its own name (same millisecond
 * included), its side files and its sync record go with it, and nothing already there is replaced.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { COMPANION_SUFFIXES, moveAside } from "../src/MoveAside.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-aside-"))
  dirs.push(dir)
  return dir
}

describe("moveAside", () => {
  it("keeps every copy moved aside in the same millisecond, with its side files", () => {
    const db = join(scratch(), "u.sqlite")
    const now = Date.UTC(2026, 10, 22, 8, 0, 0, 123)
    const targets: Array<string> = []
    for (const generation of ["first", "second", "third"]) {
      writeFileSync(db, generation)
      writeFileSync(`${db}-wal`, `${generation} wal`)
      targets.push(moveAside(db, "conflict", now)!)
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
    expect(readdirSync(dirs[0]!).filter((f) => f === "u.sqlite")).toEqual([])
  })

  it("takes every companion along, the sync record included, and leaves none at the old name", () => {
    const db = join(scratch(), "u.sqlite")
    writeFileSync(db, "main")
    for (const suffix of COMPANION_SUFFIXES) writeFileSync(db + suffix, `companion ${suffix}`)
    const target = moveAside(db, "corrupt", Date.UTC(2026, 0, 1))!
    expect(target).toMatch(/u\.sqlite\.corrupt-2026-01-01T00-00-00-000Z$/)
    expect(COMPANION_SUFFIXES).toContain(".matrix-sync.json")
    for (const suffix of COMPANION_SUFFIXES) {
      expect(readFileSync(target + suffix, "utf8")).toBe(`companion ${suffix}`)
      expect(existsSync(db + suffix)).toBe(false)
    }
    expect(existsSync(db)).toBe(false)
  })

  it("skips a name any companion of an earlier copy already uses (nothing is replaced)", () => {
    const db = join(scratch(), "u.sqlite")
    const now = Date.UTC(2026, 0, 1)
    const taken = `${db}.corrupt-2026-01-01T00-00-00-000Z.matrix-sync.json`
    writeFileSync(taken, "an earlier copy's record")
    writeFileSync(db, "main")
    const target = moveAside(db, "corrupt", now)!
    expect(target.endsWith("-2")).toBe(true)
    expect(readFileSync(taken, "utf8")).toBe("an earlier copy's record")
  })

  it("answers undefined when there is no file to move", () => {
    expect(moveAside(join(scratch(), "absent.sqlite"), "corrupt")).toBeUndefined()
  })
})
