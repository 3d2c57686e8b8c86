/**
 * The process sandbox a skill's script runs in: bubblewrap (`bwrap`, Debian's `bubblewrap`), as
 * docs/skills-that-run.md#the-sandbox says. The script sees the system's programs and libraries
 * read-only (`/usr`, a few files of `/etc`), its own skill folder read-only at `/skill`, a fresh
 * scratch directory at `/scratch` (a size-bounded tmpfs, the only place it can write besides
 * `/tmp`, also bounded) and nothing else of the host: no home, no repository, no other skill, no
 * network (a new network namespace with only a loopback), no other process (a new PID namespace),
 * an environment of a few variables. When the operator allows some hosts (`allowHosts`), the
 * namespace stays its own, and HTTP(S) to those hosts goes through a proxy the host runs for that
 * run only (`NetworkProxy.ts`). CPU time, memory, file size, open files and processes are
 * capped with rlimits (`prlimit`), wall time and output by the host, which kills the whole
 * sandbox when one is exceeded.
 *
 * Files go in and out as tar streams on two extra pipes (fd 3 in, fd 4 out), written and read by
 * the host itself (`Tar.ts`): the host never opens a path inside the sandbox, so a symbolic link
 * the script leaves in the scratch directory points at nothing the host will read or write.
 */
import { spawn } from "node:child_process"
import { accessSync, constants, existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { delimiter, dirname, join } from "node:path"
import type { Readable, Writable } from "node:stream"
import { parseAllowHosts } from "./AllowHosts.js"
import { sandboxNetwork, startProxy } from "./NetworkProxy.js"
import { readTar, type ScratchFile, writeTar } from "./Tar.js"

/** The bounds of one run. Every field is a positive integer. */
export interface SandboxLimits {
  /** Wall time before the sandbox is killed. */
  readonly timeoutMs: number
  /** CPU seconds (RLIMIT_CPU): a busy loop is killed by the kernel. */
  readonly cpuSeconds: number
  /** Bytes of data memory a process may map (RLIMIT_DATA): a memory bomb fails to allocate. */
  readonly memoryBytes: number
  /** Bytes of stdout and stderr together; past it the sandbox is killed and the rest dropped. */
  readonly outputBytes: number
  /** Bytes of `/scratch` (and, separately, of `/tmp`): the size of each tmpfs. */
  readonly scratchBytes: number
  /** Bytes of one file the script writes (RLIMIT_FSIZE). */
  readonly fileBytes: number
  /** Processes of the sandbox's user (RLIMIT_NPROC), applied when it runs under its own uid. */
  readonly processes: number
}

/** Defaults: enough for a PDF or a spreadsheet script, small enough for a shared host. */
export const DEFAULT_LIMITS: SandboxLimits = {
  timeoutMs: 30_000,
  cpuSeconds: 20,
  memoryBytes: 1024 * 1024 * 1024,
  outputBytes: 256 * 1024,
  scratchBytes: 64 * 1024 * 1024,
  fileBytes: 32 * 1024 * 1024,
  processes: 64
}

/** Where the skill folder is inside the sandbox (read-only; `SKILL_DIR` says it too). */
export const SKILL_MOUNT = "/skill"
/** Where the scratch directory is inside the sandbox: the working directory, and the only writable one besides `/tmp`. */
export const SCRATCH_MOUNT = "/scratch"

/** What one run asks. */
export interface SandboxRequest {
  /** The path of `bwrap`. */
  readonly bwrap: string
  /** The skill folder's real path, mounted read-only at `/skill`. */
  readonly folder: string
  /** The command inside the sandbox, e.g. `["python3", "/skill/scripts/x.py", "in.pdf"]`. */
  readonly argv: ReadonlyArray<string>
  /** Files put in `/scratch` before the command runs. */
  readonly files: ReadonlyArray<ScratchFile>
  readonly limits: SandboxLimits
  /** More folders mounted read-only at their own path (a Python venv, Node's install). */
  readonly readOnly?: ReadonlyArray<string> | undefined
  /** Folders prepended to `PATH` inside (a venv's `bin`). */
  readonly path?: ReadonlyArray<string> | undefined
  /** The uid and gid the sandbox runs as: by default 65534 (nobody) when the host is root. */
  readonly runAs?: { readonly uid: number; readonly gid: number } | undefined
  /** Aborting it kills the sandbox (the turn was aborted). */
  readonly signal?: AbortSignal | undefined
  /**
   * Hosts the script may reach over HTTP(S), through a proxy (`host`, `host:port`, `*.name`; see
   * `parseAllowHosts`). Empty or absent: no network at all. An entry that is not one is a
   * `RangeError`.
   */
  readonly allowHosts?: ReadonlyArray<string> | undefined
  /** The Node that runs the network forwarder inside when `allowHosts` is set (its install is mounted read-only); default: the one running the host. */
  readonly node?: string | undefined
}

/** Why the host stopped a run before it ended by itself. */
export type StopReason = "timeout" | "output" | "aborted" | "files"

/** What one run gave. */
export interface SandboxResult {
  /** The command's exit code; null when it was killed by a signal. */
  readonly exitCode: number | null
  /** The signal that ended it (`SIGKILL`, `SIGXCPU`), if one did. */
  readonly signal: string | null
  /** Set when the host stopped it (the bound it crossed). */
  readonly stopped?: StopReason | undefined
  readonly stdout: string
  readonly stderr: string
  /** Bytes of output the script wrote beyond `outputBytes`, dropped (0 when none). */
  readonly droppedOutputBytes: number
  /** The regular files of `/scratch` when the command ended (absent when it was stopped). */
  readonly files: ReadonlyArray<ScratchFile>
  /** Entries of `/scratch` that are not regular files (links, FIFOs), left out. */
  readonly skipped: ReadonlyArray<string>
  readonly durationMs: number
}

/** The first `bwrap` on `PATH` (or `candidates`), or undefined. */
export const findBwrap = (path: string = process.env.PATH ?? ""): string | undefined => {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue
    const file = join(dir, "bwrap")
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {
      // not here
    }
  }
  return undefined
}

/** Files of `/etc` a program may need to start (the dynamic loader's cache, Debian's alternatives). */
const ETC = [
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/alternatives",
  "/etc/localtime"
]

/** The system's program folders, mounted read-only (a merged-/usr system links the rest to /usr). */
const SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"]

/**
 * The shell that runs inside: unpacks fd 3 into the scratch directory, runs `beforeScript` (the
 * network forwarder's start, when hosts are allowed), runs the command under its
 * rlimits with no stdin and without the two pipes, kills whatever it left running (every process
 * of the PID namespace but bwrap's init and this shell), and packs the scratch directory to fd 4.
 * It exits with the command's code; 125 means the sandbox itself failed.
 */
const wrapper = (beforeScript: ReadonlyArray<string>): string =>
  [
    `cd ${SCRATCH_MOUNT} || exit 125`,
    `tar -x --no-same-owner --no-same-permissions -f - <&3 || { echo "[sandbox] the files could not be put in ${SCRATCH_MOUNT}" >&2; exit 125; }`,
    "exec 3<&-",
    ...beforeScript,
    '"$@" </dev/null 4>&-',
    "rc=$?",
    "kill -KILL -1 2>/dev/null",
    `tar -c -f - -C ${SCRATCH_MOUNT} . >&4 2>/dev/null`,
    "exit $rc"
  ].join("\n")

const isRoot = (): boolean => typeof process.getuid === "function" && process.getuid() === 0

const limitArgs = (limits: SandboxLimits, ownUid: boolean): string[] => [
  "prlimit",
  // Soft limit then hard one second later: the kernel sends SIGXCPU at the soft limit (reported
  // as the CPU bound) and SIGKILL only at the hard one, which a script ignoring SIGXCPU reaches.
  `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
  `--data=${limits.memoryBytes}`,
  `--fsize=${limits.fileBytes}`,
  "--nofile=256",
  "--core=0",
  ...(ownUid ? [`--nproc=${limits.processes}`] : []),
  "--"
]

/** The folder a binary's install lives in (`/x/bin/node` → `/x`). */
const installOf = (binary: string): string => dirname(dirname(binary))

/**
 * The arguments of `bwrap` for a request (exported for the docs' example and the tests).
 * `proxyDir`, the folder of a running proxy's socket, gives the sandbox its network to the
 * allowed hosts.
 */
export const bwrapArgs = (request: SandboxRequest, proxyDir?: string): string[] => {
  const forwarderNode = request.node ?? process.execPath
  const network =
    proxyDir === undefined ? undefined : sandboxNetwork(proxyDir, forwarderNode, request.limits.cpuSeconds)
  const readOnly = [...(request.readOnly ?? [])]
  const nodeInstall = installOf(forwarderNode)
  if (
    network !== undefined &&
    nodeInstall !== "/" &&
    nodeInstall !== "/usr" &&
    !readOnly.includes(nodeInstall)
  )
    readOnly.push(nodeInstall)
  const args: string[] = []
  for (const dir of SYSTEM) if (existsSync(dir)) args.push("--ro-bind", dir, dir)
  for (const file of ETC) args.push("--ro-bind-try", file, file)
  // `/tmp` first: bwrap applies mounts in order, and a tmpfs mounted over `/tmp` after them would
  // hide the read-only folders that live under it (an interpreter's install in /tmp).
  args.push("--size", String(request.limits.scratchBytes), "--tmpfs", "/tmp")
  for (const dir of readOnly) args.push("--ro-bind", dir, dir)
  args.push("--ro-bind", request.folder, SKILL_MOUNT)
  // Read-only is enough: connect() on a Unix socket needs write access to the socket, not to its mount.
  if (network !== undefined) args.push(...network.args)
  args.push("--size", String(request.limits.scratchBytes), "--tmpfs", SCRATCH_MOUNT)
  args.push("--dev", "/dev", "--proc", "/proc")
  // bwrap's root is a tmpfs of no size bound: read-only, it cannot be filled to eat the host's memory.
  args.push("--remount-ro", "/")
  // Its own network namespace even with allowed hosts: the proxy is the only way out.
  args.push("--unshare-all", "--die-with-parent", "--new-session", "--hostname", "sandbox")
  // bwrap writes the sandbox's namespaces on fd 5, so that after a kill the host can find every
  // process of its PID namespace and make sure none is left.
  args.push("--info-fd", "5")
  args.push("--clearenv", "--chdir", SCRATCH_MOUNT)
  const path = [...(request.path ?? []), "/usr/local/bin", "/usr/bin", "/bin"].join(":")
  const env: Record<string, string> = {
    PATH: path,
    HOME: SCRATCH_MOUNT,
    TMPDIR: "/tmp",
    LANG: "C.UTF-8",
    PYTHONDONTWRITEBYTECODE: "1",
    PYTHONUNBUFFERED: "1",
    SKILL_DIR: SKILL_MOUNT,
    // `python -m scripts.x` and `from scripts.y import z`, as skills tell, work from the scratch too.
    PYTHONPATH: SKILL_MOUNT,
    ...network?.env
  }
  for (const [k, v] of Object.entries(env)) args.push("--setenv", k, v)
  const ownUid = request.runAs !== undefined || isRoot()
  args.push(
    "--",
    "/bin/sh",
    "-c",
    wrapper(network?.start ?? []),
    "sandbox",
    ...limitArgs(request.limits, ownUid),
    ...request.argv
  )
  return args
}

/** Kills the sandbox's process group (bwrap leads it; its PID namespace dies with it). */
const killGroup = (pid: number | undefined): void => {
  if (pid === undefined) return
  try {
    process.kill(-pid, "SIGKILL")
  } catch {
    // already gone
  }
}

/**
 * Kills every process still running in the PID namespace `namespace` (its inode, from bwrap's
 * info), and waits, at most `boundMs`, until none is left running. Killing bwrap's group is not
 * enough: the sandbox's processes sit in a session of their own (`--new-session`), and on a host
 * whose init does not reap, the namespace's own init can linger as a zombie without taking its
 * processes down with it.
 */
const killNamespace = async (namespace: string, boundMs: number): Promise<void> => {
  const link = `pid:[${namespace}]`
  const until = performance.now() + boundMs
  while (performance.now() < until) {
    let running = 0
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue
      try {
        if (readlinkSync(`/proc/${pid}/ns/pid`) !== link) continue
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
        if (/\) [ZX] /.test(stat)) continue
        running++
        process.kill(Number(pid), "SIGKILL")
      } catch {
        // gone meanwhile, or not ours to read
      }
    }
    if (running === 0) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/**
 * Runs a command in the sandbox. Never rejects for what the command does: that is the result.
 * With allowed hosts, the proxy lives exactly as long as the run: closed, and its folder
 * removed, however the run ends.
 */
export const runInSandbox = async (request: SandboxRequest): Promise<SandboxResult> => {
  const allowed = parseAllowHosts(request.allowHosts ?? [])
  if (allowed.errors.length > 0) throw new RangeError(allowed.errors.join(" "))
  const runAs = request.runAs ?? (isRoot() ? { uid: 65534, gid: 65534 } : undefined)
  if (allowed.hosts.length === 0) return runBwrap(request, runAs, undefined)
  const proxy = await startProxy(allowed.hosts, runAs)
  try {
    return await runBwrap(request, runAs, proxy.dir)
  } finally {
    await proxy.close()
  }
}

const runBwrap = (
  request: SandboxRequest,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
  proxyDir: string | undefined
): Promise<SandboxResult> =>
  new Promise((resolvePromise, reject) => {
    const started = performance.now()
    const child = spawn(request.bwrap, bwrapArgs(request, proxyDir), {
      stdio: ["ignore", "pipe", "pipe", "pipe", "pipe", "pipe"],
      detached: true, // its own process group, killed as one
      // bwrap's own environment is readable in the sandbox (/proc/1/environ): it gets nothing.
      env: { PATH: "/usr/bin:/bin" },
      ...(runAs === undefined ? {} : { uid: runAs.uid, gid: runAs.gid })
    })
    let stopped: StopReason | undefined
    const stop = (reason: StopReason) => {
      stopped ??= reason
      killGroup(child.pid)
    }
    const out: Buffer[] = []
    const err: Buffer[] = []
    let kept = 0
    let dropped = 0
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      const room = request.limits.outputBytes - kept
      if (chunk.length <= room) {
        into.push(chunk)
        kept += chunk.length
        return
      }
      if (room > 0) into.push(chunk.subarray(0, room))
      kept += Math.max(room, 0)
      dropped += chunk.length - Math.max(room, 0)
      stop("output")
    }
    ;(child.stdout as Readable).on("data", collect(out))
    ;(child.stderr as Readable).on("data", collect(err))
    const tarOut: Buffer[] = []
    let tarBytes = 0
    // The packed scratch is at most its tmpfs plus tar's headers: more is not a tar of it.
    const tarMax = request.limits.scratchBytes * 2 + 1024 * 1024
    const fd4 = child.stdio[4] as Readable
    fd4.on("data", (chunk: Buffer) => {
      tarBytes += chunk.length
      if (tarBytes > tarMax) stop("files")
      else tarOut.push(chunk)
    })
    fd4.on("error", () => {})
    let info = ""
    const fd5 = (child.stdio as unknown as ReadonlyArray<Readable>)[5]!
    fd5.on("data", (chunk: Buffer) => {
      if (info.length < 4096) info += chunk.toString("utf8")
    })
    fd5.on("error", () => {})
    const fd3 = child.stdio[3] as Writable
    fd3.on("error", () => {}) // the sandbox may close it without reading (a failed start)
    fd3.end(Buffer.from(writeTar(request.files)))

    const timer = setTimeout(() => stop("timeout"), request.limits.timeoutMs)
    const onAbort = () => stop("aborted")
    if (request.signal?.aborted) onAbort()
    else request.signal?.addEventListener("abort", onAbort, { once: true })

    child.on("error", (error) => {
      clearTimeout(timer)
      request.signal?.removeEventListener("abort", onAbort)
      reject(error)
    })
    child.on("close", async (code, signal) => {
      clearTimeout(timer)
      request.signal?.removeEventListener("abort", onAbort)
      // Killed from outside, the sandbox's processes die just after bwrap: wait for them.
      const namespace = /"pid-namespace"\s*:\s*(\d+)/.exec(info)
      if (stopped !== undefined && namespace !== null) await killNamespace(namespace[1]!, 2_000)
      const contents =
        stopped === undefined ? readTar(Buffer.concat(tarOut)) : { files: [], skipped: [], truncated: false }
      resolvePromise({
        exitCode: code,
        signal,
        ...(stopped === undefined ? {} : { stopped }),
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        droppedOutputBytes: dropped,
        files: contents.files,
        skipped: contents.skipped,
        durationMs: performance.now() - started
      })
    })
  })

/**
 * Why scripts cannot run on this host, or undefined when they can: no `bwrap` on `PATH`, or one
 * that cannot make its namespaces (a container without user namespaces). Runs `true` in the same
 * sandbox a script gets, so a yes here is a yes for the scripts.
 */
export const probeSandbox = async (
  bwrap: string | undefined,
  folder: string
): Promise<string | undefined> => {
  if (bwrap === undefined)
    return "bubblewrap (`bwrap`) is not on PATH: install it (Debian/Ubuntu: apt-get install bubblewrap)"
  try {
    const result = await runInSandbox({
      bwrap,
      folder,
      argv: ["true"],
      files: [],
      limits: { ...DEFAULT_LIMITS, timeoutMs: 10_000 }
    })
    if (result.exitCode === 0) return undefined
    const said = result.stderr.trim().split("\n").slice(-1)[0] ?? ""
    return `bubblewrap (${bwrap}) could not make a sandbox here${said === "" ? "" : `: ${said}`}`
  } catch (thrown) {
    return `bubblewrap (${bwrap}) could not be started: ${thrown instanceof Error ? thrown.message : String(thrown)}`
  }
}
