/**
 * A separate process for the cross-process test: opens the ledger file given on the command
 * line and deducts 1 credit `count` times, one transaction each, once all workers are ready.
 */
import { readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Clock } from "@plugboard/core"
import { Effect } from "effect"
import { SqliteCreditLedger } from "../src/index.js"

const [filename, did, count, barrier, parties] = process.argv.slice(2)
if (filename === undefined || did === undefined || count === undefined || barrier === undefined) {
  throw new Error("usage: deduct-worker <filename> <did> <count> <barrier-dir> <parties>")
}

/**
 * Announces `stage` and waits until every worker has: the first barrier starts them together,
 * the one half-way makes their writes overlap by construction (every worker's first half is
 * committed before any worker's second half), whatever the scheduler does on a busy machine.
 */
const barrierAt = async (stage: string): Promise<void> => {
  writeFileSync(join(barrier, `${stage}-${process.pid}`), "")
  const arrived = () => readdirSync(barrier).filter((f) => f.startsWith(`${stage}-`)).length
  while (arrived() < Number(parties)) await new Promise((resolve) => setTimeout(resolve, 5))
}

await barrierAt("ready")

await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const ledger = yield* SqliteCreditLedger.make({ filename, busyTimeoutMs: 30_000 })
      for (let i = 0; i < Number(count); i++) {
        if (i === Math.floor(Number(count) / 2)) yield* Effect.promise(() => barrierAt("half"))
        yield* ledger.deduct(did, 1, `worker ${process.pid}`)
        // Yield to the event loop so the processes' transactions interleave.
        if (i % 10 === 0) yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      }
    })
  ).pipe(Effect.provide(Clock.layer))
)
