/** The per-user gate: shared turns/operations versus the exclusive (sync) holder. */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { UserGate } from "../src/index.js"

const tick = () => new Promise((resolve) => setTimeout(resolve, 0))

describe("UserGate", () => {
  it("an operation of a running turn is let in while the exclusive holder waits (no deadlock)", async () => {
    const gate = new UserGate()
    const log: Array<string> = []
    expect(gate.enter("turn")).toBeUndefined()
    const exclusive = gate.enterExclusive()!.then(() => log.push("exclusive"))
    // A new turn waits behind the queued exclusive holder (writer preference)…
    const lateTurn = gate.enter("turn")!.then(() => log.push("late turn"))
    // …but an operation, most likely the running turn's own, goes through.
    expect(gate.enter("op")).toBeUndefined()
    gate.leave("op")
    await tick()
    expect(log).toEqual([])
    gate.leave("turn")
    await exclusive
    expect(log).toEqual(["exclusive"])
    gate.leaveExclusive()
    await lateTurn
    expect(log).toEqual(["exclusive", "late turn"])
    gate.leave("turn")
    expect(gate.idle).toBe(true)
  })

  it("never lets the exclusive holder overlap a shared one, whatever the interleaving", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ kind: fc.constantFrom("op", "turn", "exclusive"), hold: fc.nat(3) }), {
          maxLength: 25
        }),
        async (actors) => {
          const gate = new UserGate()
          let shared = 0
          let exclusive = 0
          let violations = 0
          await Promise.all(
            actors.map(async ({ kind, hold }, i) => {
              for (let k = 0; k < i % 3; k++) await tick()
              if (kind === "exclusive") {
                const wait = gate.enterExclusive()
                if (wait) await wait
                exclusive++
                if (shared > 0 || exclusive > 1) violations++
                for (let k = 0; k < hold; k++) await tick()
                exclusive--
                gate.leaveExclusive()
              } else {
                const wait = gate.enter(kind as "op" | "turn")
                if (wait) await wait
                shared++
                if (exclusive > 0) violations++
                for (let k = 0; k < hold; k++) await tick()
                shared--
                gate.leave(kind as "op" | "turn")
              }
            })
          )
          expect(violations).toBe(0)
          expect(gate.idle).toBe(true)
        }
      ),
      { numRuns: 100 }
    )
  })
})
