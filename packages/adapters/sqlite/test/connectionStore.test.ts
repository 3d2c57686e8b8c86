/**
 * The SQLite ConnectionStore: the port's conformance suite; a record read back by another
 * connection to the file (another process of the host); a foreign file refused untouched.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ConnectionStore } from "@plugboard/core"
import { ConnectionStoreConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { connectionsFile, layerConnectionStore, makeConnectionStore } from "../src/index.js"

const dirs: Array<string> = []
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-connections-"))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

ConnectionStoreConformance.run("sqlite", () =>
  layerConnectionStore({ filename: connectionsFile(freshDir()) })
)

const withStore = <A>(
  filename: string,
  f: (store: ConnectionStore.ConnectionStoreService) => Effect.Effect<A, unknown>
): Promise<A> =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(makeConnectionStore({ filename }), f)) as Effect.Effect<A>)

describe("SQLite ConnectionStore", () => {
  it("a record written by one connection to the file is read by the next", async () => {
    const filename = connectionsFile(freshDir())
    await withStore(filename, (s) => s.put("did:key:a", "github", "sealed-text", 7))
    expect(await withStore(filename, (s) => s.get("did:key:a", "github"))).toEqual({
      server: "github",
      sealed: "sealed-text",
      updatedAtMs: 7
    })
  })

  it("a file that is not a connection store fails unavailable, naming it, and is left untouched", async () => {
    const filename = join(freshDir(), "connections.sqlite")
    writeFileSync(filename, "not a database at all, just text that is long enough to have a header")
    const before = readFileSync(filename)
    const exit = await Effect.runPromiseExit(Effect.scoped(makeConnectionStore({ filename })))
    expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.message).toContain(filename)
    expect(readFileSync(filename)).toEqual(before)
  })
})
