/**
 * A separate process for the cross-process test: opens the ledger file given on the command
 * line and deducts 1 credit `count` times, one transaction each, once all workers are ready.
 */
import { readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Clock } from "@plugboard/core"
import { Effect } from "effect"
import { SqliteCreditLedger } from "../../src/ledger/index.js"

const [filename, did, count, barrier, parties] = process.argv.slice(2)
if (filename === undefined || did === undefined || count === undefined || barrier === undefined) {
  throw new Error("usage: deduct-worker <filename> <did> <count> <barrier-dir> <parties>")
}

// Start together: announce readiness, then wait until every worker is ready, so the
// processes' writes overlap instead of running one after another.
writeFileSync(join(barrier, `ready-${process.pid}`), "")
while (readdirSync(barrier).length < Number(parties)) await new Promise((resolve) => setTimeout(resolve, 5))

await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const ledger = yield* SqliteCreditLedger.make({ filename, busyTimeoutMs: 30_000 })
      for (let i = 0; i < Number(count); i++) {
        yield* ledger.deduct(did, 1, `worker ${process.pid}`)
        // Yield to the event loop so the processes' transactions interleave.
        if (i % 10 === 0) yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      }
    })
  ).pipe(Effect.provide(Clock.layer))
)
