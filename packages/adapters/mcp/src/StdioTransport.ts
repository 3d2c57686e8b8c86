/**
 * The stdio transport of an MCP connection: the server is a child process spoken to over its
 * stdin and stdout, as the SDK's `StdioClientTransport` does, except that the child leads a
 * process group of its own, and stopping it stops the whole group and waits until it is gone.
 * The SDK's transport signals only the child it spawned and does not wait after its last signal,
 * so a server that never answered `initialize`, or one started through a wrapper (`npx`, `uvx`,
 * a shell script) whose real server is a grandchild, was left running after `McpPool.close()`
 * (issue 36, item 22; docs/mounting.md, Lifecycle).
 *
 * Stopping: the child's stdin ends (the protocol's shutdown); if the group is not gone within
 * `graceMs` it gets SIGTERM, then SIGKILL, each after `graceMs` more. A server that never
 * finished initializing is not waited for after its stdin ends (`kill`). If the host exits
 * without closing its pool, every group still running gets SIGTERM as the process exits: a child
 * in its own group does not receive the terminal's Ctrl-C. On Windows there are no process groups:
 * the child alone is signalled.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readdir, readFile } from "node:fs/promises"
import {
  type JSONRPCMessage,
  ReadBuffer,
  serializeMessage,
  type Transport
} from "@modelcontextprotocol/client"
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/client/stdio"

/** How long each step of stopping a server waits before the next (the SDK's own 2 s). */
export const STOP_GRACE_MS = 2_000
const POLL_MS = 20
const GROUPS = process.platform !== "win32"

/** What starting a stdio server needs. */
export interface StdioParams {
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** Added to the SDK's default inherited variables (`HOME`, `PATH`, ...). */
  readonly env: Readonly<Record<string, string>>
  readonly cwd?: string | undefined
  /** Largest message read from the child (the SDK's `ReadBuffer` default, 10 MiB, when absent). */
  readonly maxBufferSize?: number | undefined
  /** Every chunk the child writes to stderr. */
  readonly onStderr: (chunk: Buffer) => void
  /** The child exited (its code, or the signal that ended it). */
  readonly onExit: (code: number | null, signal: NodeJS.Signals | null) => void
  readonly graceMs?: number | undefined
}

// The groups of children still running, for the host's exit (one listener for every transport).
const running = new Set<number>()
let exitHook = false
const onProcessExit = (): void => {
  for (const pgid of running) signalGroup(pgid, "SIGTERM")
}

const signalGroup = (pid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(GROUPS ? -pid : pid, signal)
  } catch {
    // Gone already (ESRCH), or never ours to signal.
  }
}

/**
 * Whether a process of the group led by `pgid` still runs. A member that died but was not yet
 * reaped (a zombie: an orphan waits for init, which in a container may never reap it) counts as
 * gone: it runs nothing and holds nothing. Without `/proc` (macOS), any member counts.
 */
const groupRuns = async (pgid: number): Promise<boolean> => {
  try {
    process.kill(GROUPS ? -pgid : pgid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
  if (process.platform !== "linux") return true
  let names: ReadonlyArray<string>
  try {
    names = await readdir("/proc")
  } catch {
    return true
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => "")
    // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses, so read after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true
  }
  return false
}

/** A `Transport` over a child's stdio whose `close()` stops the child's whole process group. */
export class GroupStdioTransport implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: Transport["onmessage"]
  private readonly params: StdioParams
  private readonly graceMs: number
  private readonly buffer: ReadBuffer
  private child: ChildProcess | undefined
  /** Resolves when the child has exited and its pipes closed. */
  private closed: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  /** Ends the wait after stdin's end early (`kill`). */
  private hurry: (() => void) | undefined
  private hurried = false

  constructor(params: StdioParams) {
    this.params = params
    this.graceMs = params.graceMs ?? STOP_GRACE_MS
    this.buffer = new ReadBuffer(
      params.maxBufferSize === undefined ? undefined : { maxBufferSize: params.maxBufferSize }
    )
  }

  /** The child's process id (its group's id too), once spawned. */
  get pid(): number | undefined {
    return this.child?.pid
  }

  /**
   * Always null (stderr goes to `onStderr`). With `pid`, it marks this transport as stdio to the
   * SDK's version negotiation: a `server/discover` probe left unanswered then means a 2025
   * server (it falls back to `initialize`), not an outage.
   */
  get stderr(): null {
    return null
  }

  start(): Promise<void> {
    if (this.child !== undefined) throw new Error("GroupStdioTransport already started.")
    return new Promise((resolve, reject) => {
      const child = spawn(this.params.command, [...this.params.args], {
        env: { ...getDefaultEnvironment(), ...this.params.env },
        stdio: ["pipe", "pipe", "pipe"],
        shell: false,
        windowsHide: true,
        detached: GROUPS,
        ...(this.params.cwd === undefined ? {} : { cwd: this.params.cwd })
      })
      this.child = child
      this.closed = new Promise((done) => child.once("close", () => done()))
      child.once("error", (error) => {
        reject(error)
        this.onerror?.(error)
      })
      child.once("spawn", () => {
        if (child.pid !== undefined) {
          running.add(child.pid)
          if (!exitHook) {
            exitHook = true
            process.on("exit", onProcessExit)
          }
        }
        resolve()
      })
      child.once("exit", (code, signal) => this.params.onExit(code, signal))
      child.once("close", () => {
        this.onclose?.()
      })
      child.stdin?.on("error", (error) => this.onerror?.(error))
      child.stdout?.on("error", (error) => this.onerror?.(error))
      child.stderr?.on("error", () => {})
      child.stderr?.on("data", (chunk: Buffer) => this.params.onStderr(chunk))
      child.stdout?.on("data", (chunk: Buffer) => {
        try {
          this.buffer.append(chunk)
        } catch (error) {
          this.onerror?.(error as Error)
          void this.close()
          return
        }
        for (;;) {
          let message: JSONRPCMessage | null
          try {
            message = this.buffer.readMessage()
          } catch (error) {
            this.onerror?.(error as Error)
            continue
          }
          if (message === null) break
          this.onmessage?.(message)
        }
      })
    })
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin
      if (stdin == null || this.stopping !== undefined) {
        reject(new Error("Not connected"))
        return
      }
      if (stdin.write(serializeMessage(message))) resolve()
      else stdin.once("drain", resolve)
    })
  }

  /** Stops the server and its group (see the module comment); resolves once they are gone. Idempotent. */
  close(): Promise<void> {
    this.stopping ??= this.stop()
    return this.stopping
  }

  /** As `close()`, without waiting for the server to exit on its own after its stdin ends. */
  kill(): Promise<void> {
    this.hurried = true
    this.hurry?.()
    return this.close()
  }

  private async stop(): Promise<void> {
    const child = this.child
    const pid = child?.pid
    if (child === undefined || pid === undefined) {
      this.buffer.clear()
      return
    }
    try {
      child.stdin?.end()
    } catch {
      // A stdin already broken: the signals below still apply.
    }
    if (!this.hurried) await this.goneWithin(pid, this.graceMs, true)
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      if (!(await this.runs(pid))) break
      signalGroup(pid, signal)
      await this.goneWithin(pid, this.graceMs, false)
    }
    // SIGKILL cannot be refused: the child's exit is due, and its pipes close with the group
    // (bounded: a process that left the group may still hold them).
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.closed,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.graceMs)
      })
    ])
    clearTimeout(timer)
    running.delete(pid)
    this.buffer.clear()
  }

  /** The child has not exited, or another process of its group still runs. */
  private async runs(pid: number): Promise<boolean> {
    return this.child?.exitCode === null && this.child.signalCode === null ? true : groupRuns(pid)
  }

  /** Waits until the group is gone, at most `ms` (or until `kill()`, when `hurriable`). */
  private async goneWithin(pid: number, ms: number, hurriable: boolean): Promise<void> {
    const deadline = Date.now() + ms
    let timer: NodeJS.Timeout | undefined
    const hurried = hurriable
      ? new Promise<void>((resolve) => {
          this.hurry = resolve
        })
      : undefined
    try {
      while (Date.now() < deadline && (await this.runs(pid))) {
        const wait = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - Date.now())))
        })
        await (hurried === undefined ? wait : Promise.race([wait, hurried]))
        clearTimeout(timer)
        if (this.hurried && hurriable) return
      }
    } finally {
      clearTimeout(timer)
      if (hurriable) this.hurry = undefined
    }
  }
}

/** A stdio transport that can also be stopped without the grace after stdin's end. */
export type StdioTransport = Transport & { readonly kill: () => Promise<void> }

/**
 * The transport for a stdio server: a `GroupStdioTransport`, or on Windows (no process groups,
 * and commands such as `npx` are `.cmd` shims the SDK's spawn resolves) the SDK's own.
 */
export const stdioTransport = (params: StdioParams): StdioTransport => {
  if (GROUPS) return new GroupStdioTransport(params)
  const transport = new StdioClientTransport({
    command: params.command,
    args: [...params.args],
    env: { ...params.env },
    ...(params.cwd === undefined ? {} : { cwd: params.cwd }),
    stderr: "pipe"
  })
  transport.stderr?.on("data", params.onStderr)
  transport.stderr?.on("error", () => {})
  // The SDK keeps its child private and drops the exit code; a crash report needs it, so the
  // child is watched from the moment it is spawned (start() creates it synchronously).
  const start = transport.start.bind(transport)
  transport.start = () => {
    const started = start()
    const child = (transport as unknown as { _process?: ChildProcess })._process
    child?.once("exit", params.onExit)
    return started
  }
  return Object.assign(transport, { kill: () => transport.close() })
}
