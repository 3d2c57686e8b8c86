/**
 * Credits and rate limits on the request path, operations per second (one core, sequential):
 *
 * 1. SQLite ledger (`@plugboard/ledger`, WAL, one `BEGIN IMMEDIATE` transaction per
 *    change): deducts, top-ups, balance reads, on a file in the OS temp dir;
 * 2. the in-memory ledger (core `CreditLedger.makeMemory`), for scale;
 * 3. the in-memory sliding-window rate limiter (core `RateLimiter.makeMemory`, limit 10/60 s)
 *    over 10,000 users.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Clock, CreditLedger, RateLimiter } from "@plugboard/core"
import { SqliteCreditLedger } from "@plugboard/ledger"
import { Effect } from "effect"

const USERS = 1_000
const SQLITE_OPS = 20_000
const MEMORY_OPS = 200_000
const LIMITER_OPS = 500_000

const did = (i: number) => `did:key:z6MkBenchUser${i % USERS}`

/** Runs `body` once; its rate by this process's CPU time and by wall clock. */
const measure = async (count: number, body: () => Promise<unknown>): Promise<string> => {
  const cpu = process.cpuUsage()
  const started = performance.now()
  await body()
  const wallMillis = performance.now() - started
  const used = process.cpuUsage(cpu)
  const cpuMillis = (used.user + used.system) / 1000
  const rate = (millis: number) => Math.round((count / millis) * 1000).toLocaleString("en-US")
  return `${rate(cpuMillis).padStart(10)}/s per CPU-second   (${rate(wallMillis)}/s wall clock)`
}

const ledgerRounds = (ledger: CreditLedger.CreditLedgerService, ops: number) => ({
  topUp: () =>
    Effect.runPromise(
      Effect.forEach(
        Array.from({ length: ops }, (_, i) => i),
        (i) => ledger.topUp(did(i), 5)
      )
    ),
  deduct: () =>
    Effect.runPromise(
      Effect.forEach(
        Array.from({ length: ops }, (_, i) => i),
        (i) => ledger.deduct(did(i), 1, "turn")
      )
    ),
  balance: () =>
    Effect.runPromise(
      Effect.forEach(
        Array.from({ length: ops }, (_, i) => i),
        (i) => ledger.balance(did(i))
      )
    )
})

export default async (): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-ledger-bench-"))
  try {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sqlite = yield* SqliteCreditLedger.make({ filename: join(dir, "ledger.db") })
          const rounds = ledgerRounds(sqlite, SQLITE_OPS)
          console.log(`sqlite ledger, ${SQLITE_OPS.toLocaleString("en-US")} ops over ${USERS} users`)
          console.log(`  top-up   ${yield* Effect.promise(() => measure(SQLITE_OPS, rounds.topUp))}`)
          console.log(`  deduct   ${yield* Effect.promise(() => measure(SQLITE_OPS, rounds.deduct))}`)
          console.log(`  balance  ${yield* Effect.promise(() => measure(SQLITE_OPS, rounds.balance))}`)
        }).pipe(Effect.provide(Clock.layer))
      )
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }

  const memory = await Effect.runPromise(CreditLedger.makeMemory.pipe(Effect.provide(Clock.layer)))
  const rounds = ledgerRounds(memory, MEMORY_OPS)
  console.log(`memory ledger, ${MEMORY_OPS.toLocaleString("en-US")} ops over ${USERS} users`)
  console.log(`  top-up   ${await measure(MEMORY_OPS, rounds.topUp)}`)
  console.log(`  deduct   ${await measure(MEMORY_OPS, rounds.deduct)}`)

  const limiter = await Effect.runPromise(RateLimiter.makeMemory().pipe(Effect.provide(Clock.layer)))
  const keys = Array.from({ length: 10_000 }, (_, i) => `did:key:z6MkLimited${i}`)
  let allowed = 0
  const line = await measure(LIMITER_OPS, () =>
    Effect.runPromise(
      Effect.forEach(
        Array.from({ length: LIMITER_OPS }, (_, i) => i),
        (i) => Effect.map(limiter.take(keys[i % keys.length]!), (d) => void (d.allowed && allowed++))
      )
    )
  )
  console.log(
    `memory rate limiter (10 per 60 s), ${LIMITER_OPS.toLocaleString("en-US")} takes over 10,000 users`
  )
  console.log(`  take     ${line}   [${allowed.toLocaleString("en-US")} allowed = 10 per user]`)
}
