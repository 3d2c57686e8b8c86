/**
 * The SQLite LoadedPluginsStore: the port's conformance suite; a thread's set read back by another
 * connection to the file (a new process of the gateway); adds from several processes at once all
 * survive, each name once and in a consistent order; a foreign file is refused untouched.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { LoadedPluginsStore } from "@plugboard/core"
import { LoadedPluginsStoreConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { layerLoadedPluginsStore, loadedPluginsFile, makeLoadedPluginsStore } from "../src/index.js"

const dirs: Array<string> = []
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-loaded-"))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

LoadedPluginsStoreConformance.run("sqlite", () =>
  layerLoadedPluginsStore({ filename: loadedPluginsFile(freshDir()) })
)

const withStore = <A>(
  filename: string,
  f: (store: LoadedPluginsStore.LoadedPluginsStoreService) => Effect.Effect<A, unknown>
): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(makeLoadedPluginsStore({ filename }), f)) as Effect.Effect<A>
  )

/** A child adding `names` to `key`, one add each, once told to go. */
const child = (filename: string, key: string, names: ReadonlyArray<string>) => {
  const proc = spawn(
    process.execPath,
    [
      "--conditions=@plugboard/source",
      "--import",
      "tsx",
      join(import.meta.dirname, "loaded-plugins-child.ts"),
      filename,
      key,
      ...names
    ],
    { stdio: ["pipe", "pipe", "pipe"], cwd: join(import.meta.dirname, "../../../..") }
  )
  let out = ""
  let err = ""
  let readyResolve: () => void = () => {}
  const ready = new Promise<void>((resolve) => {
    readyResolve = resolve
  })
  proc.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8")
    if (out.includes("ready\n")) readyResolve()
  })
  proc.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8")
  })
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)))
  return {
    ready,
    go: () => proc.stdin.end("go\n"),
    exited,
    acks: () =>
      out
        .split("\n")
        .filter((l) => l.startsWith("ack "))
        .map((l) => JSON.parse(l.slice(4)) as Array<string>),
    output: () => `${out}${err}`
  }
}

describe("SqliteLoadedPluginsStore", () => {
  it("another connection to the file (a new process) reads what a thread loaded", async () => {
    const filename = loadedPluginsFile(freshDir())
    await withStore(filename, (s) => s.add("work", ["weather", "maps"]))
    expect(await withStore(filename, (s) => s.get("work"))).toEqual(["weather", "maps"])
    expect(await withStore(filename, (s) => s.add("work", ["notes", "weather"]))).toEqual([
      "weather",
      "maps",
      "notes"
    ])
  })

  it("adds from four processes at once all survive, each name once, every answer a prefix of the last", async () => {
    const filename = loadedPluginsFile(freshDir())
    // The schema is created once before the children race on the rows.
    await withStore(filename, (s) => s.get("shared"))
    const perChild = 15
    const children = Array.from({ length: 4 }, (_, c) =>
      child(
        filename,
        "shared",
        Array.from({ length: perChild }, (_, i) => `p${c}-n${i}`)
      )
    )
    await Promise.all(children.map((c) => c.ready))
    for (const c of children) c.go()
    const codes = await Promise.all(children.map((c) => c.exited))
    expect(codes, children.map((c) => c.output()).join("\n")).toEqual([0, 0, 0, 0])
    const all = await withStore(filename, (s) => s.get("shared"))
    expect(all).toHaveLength(4 * perChild)
    expect(new Set(all).size).toBe(all.length)
    for (const c of children) {
      const acks = c.acks()
      expect(acks).toHaveLength(perChild)
      // What any process saw is the start of the final set: no process ever saw another order.
      for (const ack of acks) expect(all.slice(0, ack.length)).toEqual(ack)
      // A process's own names keep its order of adds.
      const own = all.filter((n) => n.startsWith(`p${children.indexOf(c)}-`))
      expect(own).toEqual(Array.from({ length: perChild }, (_, i) => `p${children.indexOf(c)}-n${i}`))
    }
  }, 60_000)

  it("refuses a file that is not a store, leaving it as it was", async () => {
    const dir = freshDir()
    const filename = join(dir, "not-a-db.sqlite")
    writeFileSync(filename, "this is not SQLite, and it is long enough to have a header")
    const exit = await Effect.runPromiseExit(Effect.scoped(makeLoadedPluginsStore({ filename })))
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
    expect(error?.reason).toBe("unavailable")
    expect(error?.message).toContain(`loaded-plugins store ${filename} cannot be opened (not-a-database`)
    expect(readFileSync(filename, "utf8")).toBe("this is not SQLite, and it is long enough to have a header")
  })
})
