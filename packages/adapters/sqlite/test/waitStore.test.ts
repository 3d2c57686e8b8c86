/**
 * The SQLite WaitStore: the port's conformance suite; answers racing from two connections to one
 * file (two hosts, or two processes of one) record exactly one; a wait and its answer read back
 * after the store is reopened (a restart); a foreign file refused untouched.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { WaitStore } from "@plugboard/core"
import { WaitStoreConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { layerWaitStore, makeWaitStore, waitsFile } from "../src/index.js"

const dirs: Array<string> = []
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-waits-"))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

WaitStoreConformance.run("sqlite", () => layerWaitStore({ filename: waitsFile(freshDir()) }))

const ALICE = "did:key:z6MkAlice"
const wait: WaitStore.NewWait = {
  waitId: "w1",
  did: ALICE,
  runId: "run-1",
  sessionId: "s-1",
  request: {
    _tag: "approval",
    plugin: "payments",
    tool: "send_payment",
    args: { amount: 3 },
    reason: "approval"
  },
  createdAtMs: 1_000,
  deadlineMs: 60_000
}

describe("SQLite WaitStore", () => {
  it("a wait and its answer outlive the store: reopened (a restart), they read back", async () => {
    const filename = waitsFile(freshDir())
    await Effect.runPromise(Effect.scoped(Effect.flatMap(makeWaitStore({ filename }), (s) => s.open(wait))))
    const answered = await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(makeWaitStore({ filename }), (s) =>
          s.answer(ALICE, "w1", { _tag: "decision", approved: true }, ALICE, 2_000)
        )
      )
    )
    expect(answered._tag).toBe("answered")
    const read = await Effect.runPromise(
      Effect.scoped(Effect.flatMap(makeWaitStore({ filename }), (s) => s.get(ALICE, "w1")))
    )
    expect(read).toEqual(answered.record)
  })

  it("answers racing on two connections to one file: one is recorded, the other gets it back", async () => {
    const filename = waitsFile(freshDir())
    const outcomes = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const a = yield* makeWaitStore({ filename })
          const b = yield* makeWaitStore({ filename })
          yield* a.open(wait)
          return yield* Effect.all(
            Array.from({ length: 10 }, (_, k) =>
              (k % 2 === 0 ? a : b).answer(
                ALICE,
                "w1",
                { _tag: "decision", approved: k % 3 === 0 },
                ALICE,
                2_000 + k
              )
            ),
            { concurrency: "unbounded" }
          )
        })
      )
    )
    const recorded = outcomes.filter((o) => o._tag === "answered")
    expect(recorded).toHaveLength(1)
    for (const o of outcomes) expect(o.record).toEqual(recorded[0]!.record)
  })

  it("a file of another kind is refused as unavailable, naming it, and left untouched", async () => {
    const filename = join(freshDir(), "waits.sqlite")
    writeFileSync(filename, "not a database at all, but the user's notes")
    const before = readFileSync(filename)
    const exit = await Effect.runPromiseExit(Effect.scoped(makeWaitStore({ filename })))
    expect(Exit.isFailure(exit)).toBe(true)
    if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
      expect(exit.cause.error.reason).toBe("unavailable")
      expect(exit.cause.error.message).toContain(filename)
    }
    expect(readFileSync(filename)).toEqual(before)
  })
})
