/**
 * The IPC protocol between `bench/server.bench.ts` (the orchestrator) and its child processes:
 * the servers (`plugboard.ts`, `floor.ts`, `bare-langgraph.ts`) and the load client
 * (`load-client.ts`). Every request carries an `id`; the child answers `{ id, ok, ... }`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import type { Server } from "node:http"

/** What a server child reports over one measured window (`begin` → `end`). */
export interface ServerWindow {
  /** CPU time of the server process over the window (user + system), ms. */
  readonly cpuMs: number
  /** Streamed turns the server finished in the window. */
  readonly turns: number
  /** Per stage, the sum over the window's turns (ms): plugboard's `onTimings`, the baseline's own `total`. */
  readonly stageSums: Readonly<Record<string, number>>
}

/** Sent by a server child once it listens. */
export interface Ready {
  readonly type: "ready"
  readonly url: string
  readonly oracleDid?: string
}

/** Answers requests in a child: `handle` gets each message and returns the reply's fields. */
export const serve = (
  handle: (message: { readonly type: string } & Record<string, unknown>) => Promise<object>
) => {
  process.on("message", (raw) => {
    const message = raw as { id: number; type: string } & Record<string, unknown>
    handle(message).then(
      (reply) => process.send?.({ id: message.id, ok: true, ...reply }),
      (e: unknown) =>
        process.send?.({ id: message.id, ok: false, error: e instanceof Error ? e.stack : String(e) })
    )
  })
  // The orchestrator went away (finished, failed or killed): never outlive it.
  process.on("disconnect", () => process.exit(0))
}

/** What a `node:http` server child records of its streamed turns (see `serveHttpWindows`). */
export interface TurnRecorder {
  /** Counts a finished turn that was received at `received` (`performance.now()`), in a window. */
  readonly turnEnded: (received: number) => void
}

/**
 * Runs a `node:http` server child (the baseline, the floor): listens on a random loopback port,
 * answers `begin` / `end` with the process's CPU time and the turns ended in between (their
 * `total`, request received → response ended), and on `close` closes the server, then `release`
 * (its databases), then exits. Reports `ready` last, with `oracleDid` when the server
 * authenticates its requests.
 */
export const serveHttpWindows = async (
  server: Server,
  release: () => void,
  oracleDid?: string
): Promise<TurnRecorder> => {
  let recording = false
  let turns = 0
  let totalMs = 0
  let cpu = process.cpuUsage()
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("no address")
  serve(async (message) => {
    switch (message.type) {
      case "begin":
        recording = true
        turns = 0
        totalMs = 0
        cpu = process.cpuUsage()
        return {}
      case "end": {
        const used = process.cpuUsage(cpu)
        recording = false
        const window: ServerWindow = {
          cpuMs: (used.user + used.system) / 1000,
          turns,
          stageSums: { total: totalMs }
        }
        return window
      }
      case "close":
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
        release()
        setImmediate(() => process.exit(0))
        return {}
      default:
        throw new Error(`unknown message ${message.type}`)
    }
  })
  process.send?.({
    type: "ready",
    url: `http://127.0.0.1:${address.port}`,
    ...(oracleDid === undefined ? {} : { oracleDid })
  } satisfies Ready)
  return {
    turnEnded: (received) => {
      if (!recording) return
      turns++
      totalMs += performance.now() - received
    }
  }
}

/** The orchestrator's side: one pending-reply table per child. */
export const client = (child: ChildProcess) => {
  let next = 0
  const pending = new Map<number, { resolve: (v: never) => void; reject: (e: Error) => void }>()
  child.on("message", (raw) => {
    const reply = raw as { id?: number; ok?: boolean; error?: string }
    if (reply.id === undefined) return
    const waiter = pending.get(reply.id)
    pending.delete(reply.id)
    if (reply.ok) waiter?.resolve(reply as never)
    else waiter?.reject(new Error(reply.error ?? "child failed"))
  })
  child.on("exit", (code, signal) => {
    for (const w of pending.values())
      w.reject(new Error(`child exited (${code ?? signal}) with a request pending`))
    pending.clear()
  })
  return <T>(message: { readonly type: string } & Record<string, unknown>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = ++next
      pending.set(id, { resolve: resolve as (v: never) => void, reject })
      child.send({ ...message, id })
    })
}

/** A child process of a benchmark: the process, its `ready` report, and its request function. */
export interface Child {
  readonly child: ChildProcess
  readonly ready: Promise<Ready>
  readonly call: ReturnType<typeof client>
}

/**
 * Starts `file` (TypeScript, workspace packages from source) as a child speaking this protocol,
 * in `cwd` with `env` added to this process's; `nodeArgs` go before the file (e.g. `--cpu-prof`).
 * `ready` rejects if the child exits or fails before it reports ready.
 */
export const startChild = (
  file: string,
  options: {
    readonly cwd: string
    readonly env?: Record<string, string>
    readonly nodeArgs?: ReadonlyArray<string>
  }
): Child => {
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), "--conditions=@plugboard/source", "--import", "tsx", file],
    {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    }
  )
  const ready = new Promise<Ready>((resolve, reject) => {
    child.once("message", (m) => resolve(m as Ready))
    child.once("exit", (code, signal) => reject(new Error(`${file} exited (${code ?? signal}) before ready`)))
    child.once("error", reject)
  })
  return { child, ready, call: client(child) }
}
