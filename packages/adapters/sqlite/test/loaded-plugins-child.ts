/**
 * Child process of the cross-process test: opens the store, prints `ready`, waits for `go` on
 * stdin (so every child adds at the same moment), adds its names one `add` each, prints each
 * answer as `ack <json>`, and exits 0 (1 with the error on any failure).
 *
 * argv: filename key name...
 */
import { Effect } from "effect"
import { makeLoadedPluginsStore } from "../src/index.js"

const [filename, key, ...names] = process.argv.slice(2)
const program = Effect.scoped(
  Effect.gen(function* () {
    const store = yield* makeLoadedPluginsStore({ filename: filename!, busyTimeoutMs: 10_000 })
    process.stdout.write("ready\n")
    yield* Effect.async<void>((resume) => {
      process.stdin.once("data", () => resume(Effect.void))
    })
    for (const name of names) {
      const answer = yield* store.add(key!, [name])
      process.stdout.write(`ack ${JSON.stringify(answer)}\n`)
    }
  })
)
Effect.runPromise(program).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stdout.write(`error ${String(error)}\n`)
    process.exit(1)
  }
)
