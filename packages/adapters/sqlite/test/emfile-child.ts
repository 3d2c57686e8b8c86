/**
 * Child process of the EMFILE case (corruption.test.ts), run under `ulimit -n 256`: uses up every
 * file descriptor, asks the registry for a user's thread, frees them, asks again, and prints what
 * happened as one JSON line.
 *
 * argv: directory did
 */
import { closeSync, openSync, readdirSync } from "node:fs"
import { SqliteOpenError, UserDatabaseRegistry } from "../src/index.js"

const [directory, did] = process.argv.slice(2) as [string, string]
const reported: Array<[string, string | null]> = []
const registry = new UserDatabaseRegistry({
  directory,
  openRetryMs: 100,
  onOpenError: (e) => reported.push([e.reason, e.movedTo ?? null])
})
const read = () => registry.checkpointerForUser(did).getTuple({ configurable: { thread_id: "t" } })

const held: Array<number> = []
/** Opens descriptors until EMFILE; how many it took. */
const fill = () => {
  let taken = 0
  for (;;) {
    try {
      held.push(openSync(import.meta.filename, "r"))
      taken++
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EMFILE") throw error
      return taken
    }
  }
}
fill()
// The process is still settling: tsx closes descriptors of its own (an IPC socket, a cache file)
// some milliseconds after start-up, later on a loaded machine. A descriptor freed after the fill
// would let the registry's open succeed, so fill again until none has come free for 300 ms.
for (let quiet = 0, waited = 0; quiet < 3 && waited < 100; waited++) {
  await new Promise((resolve) => setTimeout(resolve, 100))
  quiet = fill() === 0 ? quiet + 1 : 0
}
const whileExhausted = await read().then(
  () => ({ reason: "none", message: "the read succeeded with no descriptor left" }),
  (e: unknown) =>
    e instanceof SqliteOpenError
      ? { reason: e.reason, message: e.message }
      : { reason: "other", message: String(e) }
)
for (const fd of held) closeSync(fd)
const afterwards = (await read())?.checkpoint.id ?? null
await registry.close()
process.stdout.write(
  `${JSON.stringify({ whileExhausted, reported, afterwards, files: readdirSync(directory) })}\n`
)
