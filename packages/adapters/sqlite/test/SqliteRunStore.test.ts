import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Clock, RunStore } from "@plugboard/core"
import { RunStoreConformance } from "@plugboard/testing"
import BetterSqlite3 from "better-sqlite3"
import { Chunk, Effect, Exit, Fiber, Layer, Option, Queue, Stream } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { layerRunStore, makeRunStore, RUNS_APPLICATION_ID, runsFile } from "../src/index.js"
import { tempDir } from "./helpers.js"

const root = tempDir("plugboard-runs-")
afterAll(root.cleanup)
let counter = 0
const freshFile = () => runsFile(join(root.dir, `data-${++counter}`))

RunStoreConformance.run("sqlite", () => layerRunStore({ filename: freshFile() }), { numRuns: 25 })

const ALICE = "did:key:z6MkAlice"

const withStore = <A>(
  filename: string,
  body: (store: RunStore.RunStoreService) => Effect.Effect<A, unknown>
): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(makeRunStore({ filename }), body)).pipe(Effect.provide(Clock.layer))
  )

const openExit = (filename: string) =>
  Effect.runPromiseExit(Effect.scoped(makeRunStore({ filename })).pipe(Effect.provide(Clock.layer)))

const failureOf = (exit: Exit.Exit<unknown, RunStore.RunStoreError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

const message = (content: string): RunStore.FrameInput => ({ event: "message", data: { content } })

describe("SqliteRunStore", () => {
  it("a frame whose stored data is damaged is still followed, marked undecodable, without its bytes", async () => {
    const filename = freshFile()
    await withStore(filename, (s) =>
      Effect.gen(function* () {
        yield* s.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q" })
        yield* s.start(ALICE, "r")
        yield* s.append(ALICE, "r", message("fine"))
        yield* s.append(ALICE, "r", message("to be damaged"))
      })
    )
    const db = new BetterSqlite3(filename)
    db.prepare("UPDATE frames SET data = ? WHERE id = 2").run('{"content":"SECRET-BYTES')
    db.close()
    const frames = await withStore(filename, (s) =>
      Effect.gen(function* () {
        yield* s.end(ALICE, "r", { status: "finished" })
        return yield* s.frames(ALICE, "r", 0)
      })
    )
    expect(frames.map((f) => [f.id, f.event, f.data])).toEqual([
      [1, "message", { content: "fine" }],
      [2, "message", { undecodable: true }],
      [3, "done", { status: "finished" }]
    ])
    expect(JSON.stringify(frames)).not.toContain("SECRET")
  })

  it("commits the appends of one turn of the event loop together, in call order; a refused one fails alone", async () => {
    const filename = freshFile()
    const outcome = await withStore(filename, (s) =>
      Effect.gen(function* () {
        for (const runId of ["a", "b", "done"]) {
          yield* s.create({ runId, sessionId: runId, did: ALICE, requestId: runId })
          yield* s.start(ALICE, runId)
        }
        // Appends to an ended run in the same group as healthy ones: only they are refused.
        yield* s.append(ALICE, "done", message("x"))
        yield* s.end(ALICE, "done", { status: "finished" })
        const calls = Array.from({ length: 30 }, (_, i) =>
          Effect.either(s.append(ALICE, i % 3 === 2 ? "done" : i % 3 === 0 ? "a" : "b", message(`m${i}`)))
        )
        const results = yield* Effect.all(calls, { concurrency: "unbounded" })
        return { results, a: yield* s.frames(ALICE, "a", 0), b: yield* s.frames(ALICE, "b", 0) }
      })
    )
    outcome.results.forEach((r, i) => {
      if (i % 3 === 2) expect(r._tag === "Left" && r.left.reason).toBe("ended")
      else expect(r._tag).toBe("Right")
    })
    const contents = (frames: ReadonlyArray<RunStore.Frame>) => frames.map((f) => f.data.content)
    expect(contents(outcome.a)).toEqual(Array.from({ length: 10 }, (_, k) => `m${3 * k}`))
    expect(contents(outcome.b)).toEqual(Array.from({ length: 10 }, (_, k) => `m${3 * k + 1}`))
    expect(outcome.a.map((f) => f.id)).toEqual(Array.from({ length: 10 }, (_, k) => k + 1))
  })

  it("commits creations and ends with the appends of the same turn of the event loop, in call order; a refused one fails alone", async () => {
    const filename = freshFile()
    const outcome = await withStore(filename, (s) =>
      Effect.gen(function* () {
        yield* s.create({ runId: "old", sessionId: "s", did: ALICE, requestId: "q", status: "running" })
        yield* s.create({ runId: "ended", sessionId: "s", did: ALICE, requestId: "q", status: "running" })
        yield* s.end(ALICE, "ended", { status: "finished" })
        // One group: a new run and its first frames, the old run's last frames with its end, and
        // three writes the store refuses (a duplicate id, an ended run's end, a bad frame's end).
        const writes: ReadonlyArray<Effect.Effect<unknown, RunStore.RunStoreError>> = [
          s.create({ runId: "new", sessionId: "s", did: ALICE, requestId: "q", status: "running" }),
          s.append(ALICE, "new", message("first")),
          s.append(ALICE, "old", message("one ")),
          s.create({ runId: "old", sessionId: "s", did: ALICE, requestId: "q" }),
          s.end(ALICE, "old", { status: "aborted" }, [message("two")]),
          s.end(ALICE, "ended", { status: "failed" }, [message("late")]),
          s.appendAll(ALICE, "new", [message(" second"), message(" third")])
        ]
        const results = yield* Effect.all(
          writes.map((write) => Effect.either(write)),
          { concurrency: "unbounded" }
        )
        return {
          results,
          old: yield* s.frames(ALICE, "old", 0),
          fresh: yield* s.frames(ALICE, "new", 0),
          ended: yield* s.frames(ALICE, "ended", 0)
        }
      })
    )
    expect(outcome.results.map((r) => (r._tag === "Left" ? r.left.reason : "ok"))).toEqual([
      "ok",
      "ok",
      "ok",
      "invalid",
      "ok",
      "ended",
      "ok"
    ])
    expect(outcome.old.map((f) => [f.id, f.event, f.data])).toEqual([
      [1, "message", { content: "one " }],
      [2, "message", { content: "two" }],
      [3, "done", { status: "aborted", partialText: "one two" }]
    ])
    expect(outcome.fresh.map((f) => f.data.content)).toEqual(["first", " second", " third"])
    expect(outcome.ended.map((f) => f.event)).toEqual(["done"])
  })

  it("is a WAL file of its own, created with its directory", async () => {
    const filename = freshFile()
    await withStore(filename, (s) => s.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q" }))
    const db = new BetterSqlite3(filename, { readonly: true })
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal")
    expect(db.pragma("application_id", { simple: true })).toBe(RUNS_APPLICATION_ID)
    db.close()
  })

  it("after a restart, a run the dead process left running is interrupted with its partial text, losing no frame", async () => {
    const filename = freshFile()
    // First process: a turn in flight; its store is closed without ending the run.
    const written = await withStore(filename, (s) =>
      Effect.gen(function* () {
        yield* s.create({ runId: "r1", sessionId: "s1", did: ALICE, requestId: "q1" })
        yield* s.start(ALICE, "r1")
        yield* s.append(ALICE, "r1", { event: "run", data: { runId: "r1", requestId: "q1" } })
        for (const chunk of ["It is ", "18 °C ", "in Par"]) yield* s.append(ALICE, "r1", message(chunk))
        yield* s.create({ runId: "r2", sessionId: "s2", did: ALICE, requestId: "q2" })
        yield* s.create({ runId: "r3", sessionId: "s3", did: ALICE, requestId: "q3" })
        yield* s.end(ALICE, "r3", { status: "finished" })
        return yield* s.frames(ALICE, "r1", 0)
      })
    )
    // Second process on the same file: the boot sweep.
    await withStore(filename, (s) =>
      Effect.gen(function* () {
        expect(Option.map(yield* s.activeForSession(ALICE, "s1"), (r) => r.runId)).toEqual(Option.some("r1"))
        expect(yield* s.interruptUnfinished()).toHaveLength(2)
        const frames = yield* s.frames(ALICE, "r1", 0)
        expect(frames.slice(0, written.length)).toEqual(written)
        expect(frames[written.length]).toEqual({
          id: 5,
          event: "done",
          data: { status: "interrupted", partialText: "It is 18 °C in Par", reason: "restart" }
        })
        expect(frames).toHaveLength(5)
        expect(Option.getOrThrow(yield* s.get(ALICE, "r1"))).toMatchObject({
          status: "interrupted",
          partialText: "It is 18 °C in Par",
          lastFrameId: 5
        })
        expect(yield* s.activeForSession(ALICE, "s1")).toEqual(Option.none())
        expect(Option.getOrThrow(yield* s.get(ALICE, "r3")).status).toBe("finished")
        expect(yield* s.interruptUnfinished()).toHaveLength(0)
      })
    )
  })

  it("a process killed with SIGKILL mid-turn loses no committed frame", async () => {
    const filename = freshFile()
    mkdirSync(join(filename, ".."), { recursive: true })
    // The child appends numbered chunks forever and acknowledges each one after its commit.
    const child: ChildProcess = spawn(
      process.execPath,
      [
        "--conditions=@plugboard/source",
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `
        import { Clock } from "@plugboard/core"
        import { Effect } from "effect"
        import { makeRunStore } from ${JSON.stringify(join(import.meta.dirname, "../src/SqliteRunStore.ts"))}
        const program = Effect.gen(function* () {
          const s = yield* makeRunStore({ filename: ${JSON.stringify(filename)} })
          yield* s.create({ runId: "r", sessionId: "s", did: ${JSON.stringify(ALICE)}, requestId: "q" })
          yield* s.start(${JSON.stringify(ALICE)}, "r")
          for (let i = 0; ; i++) {
            const frame = yield* s.append(${JSON.stringify(ALICE)}, "r", { event: "message", data: { content: i + "," } })
            process.stdout.write("ack " + frame.id + "\\n")
            if (i % 16 === 0) yield* Effect.sleep(1)
          }
        })
        Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(Clock.layer)))
        `
      ],
      { stdio: ["ignore", "pipe", "pipe"], cwd: join(import.meta.dirname, "..") }
    )
    let acked = 0
    let errors = ""
    child.stderr!.on("data", (chunk: Buffer) => {
      errors += chunk.toString("utf8")
    })
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on("exit", (_code, signal) => resolve(signal))
    )
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk: Buffer) => {
        for (const line of chunk.toString("utf8").split("\n")) {
          if (line.startsWith("ack ")) acked = Math.max(acked, Number(line.slice(4)))
        }
        if (acked >= 200) resolve()
      })
      child.on("exit", () => reject(new Error(`child exited before 200 frames: ${errors}`)))
    })
    child.kill("SIGKILL")
    expect(await exited).toBe("SIGKILL")
    await withStore(filename, (s) =>
      Effect.gen(function* () {
        expect(yield* s.interruptUnfinished()).toHaveLength(1)
        const frames = yield* s.frames(ALICE, "r", 0)
        const done = frames[frames.length - 1]!
        const messages = frames.slice(0, -1)
        // Every acknowledged frame is there, numbered without a gap, and done closes the log.
        expect(messages.length).toBeGreaterThanOrEqual(acked)
        expect(messages.map((f) => f.id)).toEqual(messages.map((_, i) => i + 1))
        const text = messages.map((f) => f.data.content).join("")
        expect(text).toBe(messages.map((_, i) => `${i},`).join(""))
        expect(done).toEqual({
          id: messages.length + 1,
          event: "done",
          data: { status: "interrupted", partialText: text, reason: "restart" }
        })
      })
    )
  }, 60_000)

  it("a follower in the same process is woken by each commit, not by polling", async () => {
    const filename = freshFile()
    const [followed, stored] = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          // A poll far longer than the test: only the notifier can wake the follower in time.
          const s = yield* makeRunStore({ filename, pollMs: 600_000 })
          yield* s.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q" })
          yield* s.append(ALICE, "r", message("a"))
          // Each later write waits until the follower has seen the frame before it: it is waiting
          // again, and only the commit's notification can bring it the next one.
          const seen = yield* Queue.unbounded<number>()
          const follower = yield* Effect.fork(
            Stream.runCollect(Stream.tap(s.follow(ALICE, "r", 0), (f) => Queue.offer(seen, f.id)))
          )
          expect(yield* Queue.take(seen)).toBe(1)
          yield* s.append(ALICE, "r", message("b"))
          expect(yield* Queue.take(seen)).toBe(2)
          yield* s.end(ALICE, "r", { status: "finished" })
          const frames = yield* Fiber.join(follower).pipe(Effect.timeout("5 seconds"))
          return [Chunk.toReadonlyArray(frames), yield* s.frames(ALICE, "r", 0)] as const
        })
      ).pipe(Effect.provide(Clock.layer))
    )
    expect(stored.map((f) => f.event)).toEqual(["message", "message", "done"])
    expect(followed).toEqual(stored)
  })

  describe("a file that cannot be a run store fails with a clear error and is left untouched", () => {
    const expectRefused = async (filename: string, pattern: RegExp) => {
      const before = readFileSync(filename)
      const exit = await openExit(filename)
      const error = failureOf(exit)
      expect(error?.reason).toBe("unavailable")
      expect(error?.message).toContain(filename)
      expect(error?.message).toMatch(pattern)
      expect(readFileSync(filename).equals(before)).toBe(true)
    }

    it("not a database", async () => {
      const filename = freshFile()
      mkdirSync(join(filename, ".."), { recursive: true })
      writeFileSync(filename, "this is not a sqlite database\n".repeat(100))
      await expectRefused(filename, /not-a-database/)
    })

    it("damaged pages", async () => {
      const filename = freshFile()
      await withStore(filename, (s) =>
        Effect.gen(function* () {
          for (let r = 0; r < 40; r++) {
            yield* s.create({ runId: `r${r}`, sessionId: "s", did: ALICE, requestId: "q" })
            for (let i = 0; i < 10; i++) yield* s.append(ALICE, `r${r}`, message("x".repeat(200)))
          }
        })
      )
      const db = new BetterSqlite3(filename)
      db.pragma("wal_checkpoint(TRUNCATE)")
      db.close()
      const bytes = readFileSync(filename)
      for (let i = 4096; i < bytes.length - 4096; i += 7) bytes[i] = (bytes[i]! * 31 + 17) & 0xff
      writeFileSync(filename, bytes)
      await expectRefused(filename, /corrupt|not-a-database/)
    })

    it("another application's database", async () => {
      const filename = freshFile()
      mkdirSync(join(filename, ".."), { recursive: true })
      const db = new BetterSqlite3(filename)
      db.exec("CREATE TABLE accounts (id INTEGER PRIMARY KEY)")
      db.close()
      await expectRefused(filename, /another application/)
    })

    it("a run store of a newer schema", async () => {
      const filename = freshFile()
      await withStore(filename, (s) => s.create({ runId: "r", sessionId: "s", did: ALICE, requestId: "q" }))
      const db = new BetterSqlite3(filename)
      db.pragma("user_version = 2")
      db.pragma("wal_checkpoint(TRUNCATE)")
      db.close()
      await expectRefused(filename, /schema-too-new/)
    })

    it("a directory where the file should be", async () => {
      const filename = freshFile()
      mkdirSync(filename, { recursive: true })
      const error = failureOf(await openExit(filename))
      expect(error?.reason).toBe("unavailable")
      expect(error?.message).toMatch(/unreadable/)
    })

    it("as a layer, the failure is the layer's typed error, not a crash", async () => {
      const filename = freshFile()
      mkdirSync(join(filename, ".."), { recursive: true })
      writeFileSync(filename, "garbage".repeat(10))
      const exit = await Effect.runPromiseExit(
        Effect.provide(RunStore.RunStore, Layer.provide(layerRunStore({ filename }), Clock.layer)).pipe(
          Effect.scoped
        )
      )
      expect(failureOf(exit as Exit.Exit<unknown, RunStore.RunStoreError>)?.reason).toBe("unavailable")
    })
  })
})
