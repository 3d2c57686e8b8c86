/**
 * The restore gate on its own, with a restore function the test resolves by hand: concurrent
 * requests share one restore, none waits past the bound, failures back off, success clears it.
 */
import type { RestoreOutcome } from "@plugboard/matrix"
import { describe, expect, it } from "vitest"
import { makeRestoreGate } from "../src/RestoreGate.js"

const setup = (boundMs = 50, backoffMs = 1_000) => {
  let time = 0
  const pending: Array<(outcome: RestoreOutcome) => void> = []
  const records: Array<{ level: string; message: string }> = []
  const log = (level: string) => (message: string) => void records.push({ level, message })
  const gate = makeRestoreGate({
    restore: () => new Promise<RestoreOutcome>((resolve) => pending.push(resolve)),
    boundMs,
    backoffMs,
    now: () => time,
    logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") }
  })
  return {
    gate,
    pending,
    records,
    advance: (ms: number) => {
      time += ms
    }
  }
}

const unavailable: RestoreOutcome = {
  _tag: "Unavailable",
  message: "homeserver down",
  error: undefined as never
}

describe("makeRestoreGate", () => {
  it("concurrent requests of a user share one restore and go on when it resolves", async () => {
    const { gate, pending, records } = setup(10_000)
    const a = gate("did:key:a")
    const b = gate("did:key:a")
    expect(pending).toHaveLength(1)
    pending[0]!({ _tag: "NoBackup" })
    await Promise.all([a, b])
    expect(records).toEqual([])
    // Resolved: the next request asks again (the engine decides whether that costs a round trip).
    const c = gate("did:key:a")
    expect(pending).toHaveLength(2)
    pending[1]!({ _tag: "LocalPresent" })
    await c
  })

  it("a restore past the bound is logged once; later requests do not wait on it; it may still resolve", async () => {
    const { gate, pending, records, advance } = setup(30, 1_000)
    await gate("did:key:a") // returns after 30 ms with the restore still pending
    expect(records.filter((r) => r.level === "error")).toHaveLength(1)
    expect(records[0]!.message).toMatch(/did not finish within 30 ms/)
    // Answers before any timer could fire: it does not wait at all.
    const first = await Promise.race([
      gate("did:key:a").then(() => "gate"),
      new Promise((r) => setTimeout(() => r("timer"), 0))
    ])
    expect(first).toBe("gate")
    expect(pending).toHaveLength(1)
    // It resolves after all: the back-off is lifted, the next request asks again.
    pending[0]!({ _tag: "NoBackup" })
    await new Promise((r) => setTimeout(r, 0))
    advance(1)
    const next = gate("did:key:a")
    expect(pending).toHaveLength(2)
    pending[1]!({ _tag: "LocalPresent" })
    await next
    expect(records.filter((r) => r.level === "error")).toHaveLength(1)
  })

  it("an unavailable homeserver is logged and backs off for backoffMs; other users are not affected", async () => {
    const { gate, pending, records, advance } = setup(10_000, 1_000)
    const first = gate("did:key:a")
    pending[0]!(unavailable)
    await first
    expect(records).toEqual([{ level: "warn", message: expect.stringMatching(/matrix restore failed/) }])
    await gate("did:key:a")
    expect(pending).toHaveLength(1)
    const other = gate("did:key:b")
    expect(pending).toHaveLength(2)
    pending[1]!({ _tag: "NoBackup" })
    await other
    advance(1_000)
    const again = gate("did:key:a")
    expect(pending).toHaveLength(3)
    pending[2]!({ _tag: "LocalPresent" })
    await again
  })

  it("a restore that throws is logged as an error and never rejects the request", async () => {
    const records: Array<string> = []
    const gate = makeRestoreGate({
      restore: () => Promise.reject(new Error("boom")),
      boundMs: 1_000,
      backoffMs: 0,
      logger: { debug: () => {}, info: () => {}, warn: () => {}, error: (m) => void records.push(m) }
    })
    await expect(gate("did:key:a")).resolves.toBeUndefined()
    expect(records).toHaveLength(1)
  })
})
