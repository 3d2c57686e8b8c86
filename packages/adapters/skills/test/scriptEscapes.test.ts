/**
 * The script-escape battery (issue 39, docs/skills-that-run.md#what-a-script-cannot-do): hostile
 * scripts in a skill folder, each run through `run_script` in the real bubblewrap, and each
 * refused or bounded with the host unharmed: its files unread and unwritten, its network and
 * sockets unreached, its processes unseen and unkilled, its environment unread, and no process
 * left behind.
 */
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { skillText, writeFiles } from "./helpers.js"
import { BWRAP, PYTHON, type RunScriptHarness, runScriptOf, turnContext } from "./sandboxHelpers.js"

const SECRET = "plugboard-host-secret-7f3a"

/** The command lines of every process on the host: a marker in one means it still runs. */
const hostCommandLines = async (): Promise<string[]> => {
  const lines: string[] = []
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    const line = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")
    if (line !== "") lines.push(line.replace(/\0/g, " "))
  }
  return lines
}

const SCRIPTS: Readonly<Record<string, string>> = {
  "scripts/cat.sh": 'cat "$@"\n',
  "scripts/ls.sh": 'ls -a "$@"\n',
  "scripts/write.sh": 'for f in "$@"; do echo pwned > "$f" && echo "wrote $f"; done; exit 0\n',
  "scripts/tcp.sh": 'exec bash -c "echo hello > /dev/tcp/$1/$2"\n',
  "scripts/dns.sh": "getent hosts registry.npmjs.org || echo no-dns\n",
  "scripts/unix.py":
    "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1]); print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n",
  "scripts/forkbomb-7781.sh": "bomb() { bomb | bomb & }\nbomb\nwait\n",
  "scripts/flood.sh": "head -c 1000000000 /dev/zero | tr '\\0' a\n",
  "scripts/memory.py": "x = bytearray(2 * 1024 ** 3)\nprint('allocated', len(x))\n",
  "scripts/spin.sh": "while :; do :; done\n",
  "scripts/sleep.sh": "sleep 6001\n",
  "scripts/daemon.sh": "(sleep 6002 > /dev/null 2>&1 &)\necho started\n",
  "scripts/links.sh":
    'ln -s /etc/passwd passwd-link; ln -s "$1" secret-link; ln -s /skill skill-link; echo made\n',
  "scripts/plant.sh": 'rm -f in.txt; ln -s "$1" in.txt; echo planted\n',
  "scripts/proc.sh":
    'cat /proc/1/environ | tr "\\0" "\\n"; echo; ls /proc | grep -c "^[0-9]"; cat "/proc/$1/environ" 2>&1; cat "/proc/$1/cmdline" 2>&1; exit 0\n',
  "scripts/env.sh": "env\n",
  "scripts/kill.sh": 'kill -9 "$1"; echo "kill said $?"\n',
  "scripts/fill.sh": 'head -c 100000000 /dev/zero > big; echo "rc=$?"; ls -l big\n',
  "scripts/mount.sh":
    "mount -o remount,rw /skill 2>&1; mount -t tmpfs none /skill 2>&1; touch /skill/x 2>&1; unshare -r true 2>&1; exit 0\n",
  "scripts/devices.sh": "ls /dev; cat /dev/sda 2>&1; cat /dev/mem 2>&1; exit 0\n"
}

let dir: string
let skills: string
let hostDir: string
let secretFile: string
let harness: RunScriptHarness
let tight: RunScriptHarness
let server: Server
let port: number
const connections: string[] = []
let unixServer: Server
let unixPath: string
const unixConnections: string[] = []

beforeAll(async () => {
  if (BWRAP === undefined) return
  // Not the per-test temp folder of helpers.ts: this one lives for the whole battery.
  dir = await mkdtemp(join(tmpdir(), "plugboard-escapes-"))
  await chmod(dir, 0o755)
  skills = join(dir, "skills")
  hostDir = join(dir, "host")
  await mkdir(hostDir, { mode: 0o755 })
  // World-readable on purpose: what keeps the script from it is the sandbox, not permissions.
  secretFile = join(hostDir, "secret.txt")
  await writeFile(secretFile, SECRET, { mode: 0o644 })
  await writeFiles(skills, {
    "hostile/SKILL.md": skillText("name: hostile\ndescription: Hostile scripts. Use when testing."),
    "victim/SKILL.md": skillText(`name: victim\ndescription: ${SECRET}. Use when never.`),
    ...Object.fromEntries(Object.entries(SCRIPTS).map(([path, text]) => [`hostile/${path}`, text]))
  })
  // A link among the scripts that leads out of the folder is not a script of the skill.
  await symlink(join(hostDir, "secret.txt"), join(skills, "hostile/scripts/outside.sh"))
  for (const d of [skills, join(skills, "hostile"), join(skills, "hostile/scripts"), join(skills, "victim")])
    await chmod(d, 0o755)
  process.env.PLUGBOARD_TEST_SECRET = SECRET
  // loadSkills reads a folder of skills: mount the hostile one alone, linked into its own folder.
  const only = join(dir, "only")
  await mkdir(only, { mode: 0o755 })
  await symlink(join(skills, "hostile"), join(only, "hostile"))
  harness = await runScriptOf(only)
  tight = await runScriptOf(join(dir, "only"), { timeoutMs: 1_500, cpuSeconds: 1 })
  server = createServer((socket) => {
    connections.push(String(socket.remoteAddress))
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as { port: number }).port
  unixPath = join(hostDir, "host.sock")
  unixServer = createServer((socket) => {
    unixConnections.push("unix")
    socket.destroy()
  })
  await new Promise<void>((resolve) => unixServer.listen(unixPath, resolve))
  await chmod(unixPath, 0o777)
})

afterAll(async () => {
  delete process.env.PLUGBOARD_TEST_SECRET
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))
  await new Promise<void>((resolve) =>
    unixServer === undefined ? resolve() : unixServer.close(() => resolve())
  )
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
})

const run = (script: string, args: string[] = [], context = turnContext()) =>
  harness.run({ script, args }, context)

describe.skipIf(BWRAP === undefined)("script escapes: each refused or bounded, the host unharmed", () => {
  it("1. cannot read a host file outside the skill folder, even a world-readable one", async () => {
    const res = await run("scripts/cat.sh", [secretFile, "/etc/passwd", "/etc/hostname"])
    expect(res.text).not.toContain(SECRET)
    expect(res.text).toContain(`${secretFile}: No such file or directory`)
    expect(res.text).toContain("/etc/passwd: No such file or directory")
  })

  it("2. cannot read another skill's folder, by its host path or by climbing out of /skill", async () => {
    const res = await run("scripts/cat.sh", [join(skills, "victim/SKILL.md"), "/skill/../victim/SKILL.md"])
    expect(res.text).not.toContain(SECRET)
    expect(res.text.match(/No such file or directory/g)).toHaveLength(2)
  })

  it("3. sees no home, repository or host folder: only the system, its skill, scratch and tmp", async () => {
    const res = await run("scripts/ls.sh", ["/"])
    const listed = res.text
      .split("stdout:\n")[1]!
      .split("\n")
      .map((l) => l.trim())
    for (const absent of ["root", "home", "work", "opt", "var", "srv", "mnt"])
      expect(listed).not.toContain(absent)
    for (const present of ["usr", "skill", "scratch", "tmp", "proc", "dev"]) expect(listed).toContain(present)
  })

  it("4. cannot write into its own skill folder, nor anywhere outside the scratch directory", async () => {
    const res = await run("scripts/write.sh", [
      "/skill/pwned",
      "/skill/SKILL.md",
      "/usr/pwned",
      "/pwned",
      secretFile
    ])
    expect(res.text, res.text).not.toContain("wrote")
    expect(res.text).toMatch(/Read-only file system/)
    await expect(stat(join(skills, "hostile/pwned"))).rejects.toThrow()
    expect(await readFile(secretFile, "utf8")).toBe(SECRET)
    expect(await readFile(join(skills, "hostile/SKILL.md"), "utf8")).toContain("Hostile scripts")
  })

  it("5. reaches no TCP port, not even the host's loopback, nor the Internet", async () => {
    const local = await run("scripts/tcp.sh", ["127.0.0.1", String(port)])
    expect(local.isError).toBe(true)
    expect(local.text).toMatch(/Connection refused/)
    const far = await run("scripts/tcp.sh", ["1.1.1.1", "53"])
    expect(far.isError).toBe(true)
    expect(far.text).toMatch(/Network is unreachable/)
    expect(connections).toEqual([])
  })

  it("6. resolves no name", async () => {
    const res = await run("scripts/dns.sh")
    expect(res.text).toContain("no-dns")
  })

  it.skipIf(PYTHON === undefined)("7. cannot connect to a host Unix socket", async () => {
    const res = await run("scripts/unix.py", [unixPath])
    expect(res.text).toContain("refused 2") // ENOENT: the path does not exist inside
    expect(unixConnections).toEqual([])
  })

  it("8. a fork bomb is bounded and leaves no process behind", async () => {
    const res = await run("scripts/forkbomb-7781.sh")
    expect(res.out.content[0]).toBeDefined() // it ended, by itself or at the time limit
    expect((await hostCommandLines()).filter((l) => l.includes("forkbomb-7781"))).toEqual([])
    const after = await run("scripts/cat.sh", ["/skill/SKILL.md"])
    expect(after.isError).toBe(false)
  })

  it("9. 1 GB of output is cut at the output bound and the run stopped", async () => {
    const res = await run("scripts/flood.sh")
    expect(res.isError).toBe(true)
    expect(res.text).toContain("it wrote more than 65,536 bytes of output")
    expect(res.text.length).toBeLessThan(70 * 1024)
    expect(res.text).toMatch(/more output dropped/)
  })

  it.skipIf(PYTHON === undefined)("10. a memory bomb fails to allocate", async () => {
    const res = await run("scripts/memory.py")
    expect(res.isError).toBe(true)
    expect(res.text).toContain("MemoryError")
    expect(res.text).not.toContain("allocated")
  })

  it("11. a busy loop is killed at its CPU bound", async () => {
    const res = await tight.run({ script: "scripts/spin.sh" })
    expect(res.isError).toBe(true)
    expect(res.text).toMatch(/used its 1 s of CPU time|stopped after 1\.5 s/)
  })

  it("12. a long run is stopped at the time bound, and its processes with it", async () => {
    const res = await tight.run({ script: "scripts/sleep.sh" })
    expect(res.isError).toBe(true)
    expect(res.text).toContain("was stopped after 1.5 s (the time limit of a run)")
    expect((await hostCommandLines()).filter((l) => l.includes("sleep 6001"))).toEqual([])
  })

  it("13. a process left running in the background is killed when the script ends", async () => {
    const res = await run("scripts/daemon.sh")
    expect(res.isError).toBe(false)
    expect(res.text).toContain("started")
    expect((await hostCommandLines()).filter((l) => l.includes("sleep 6002"))).toEqual([])
  })

  it("14. links left in the scratch directory are not followed back on the host", async () => {
    const res = await run("scripts/links.sh", [secretFile])
    expect(res.text).toContain("made")
    expect(res.text).not.toContain(SECRET)
    expect(res.text).not.toContain("root:")
    expect(res.text).toMatch(/Left out, not regular files: .*passwd-link/)
    expect(res.out.content.filter((b) => b.type !== "text")).toEqual([])
  })

  it("15. a link planted where the next run's input goes does not write the host file", async () => {
    const context = turnContext({ turn: "plant" })
    await run("scripts/plant.sh", [secretFile], context)
    const res = await harness.run(
      { script: "scripts/cat.sh", args: ["in.txt"], files: [{ path: "in.txt", text: "overwritten" }] },
      context
    )
    expect(res.text).toContain("overwritten")
    expect(await readFile(secretFile, "utf8")).toBe(SECRET)
  })

  it("16. /proc shows only the sandbox's processes, and no host environment", async () => {
    const res = await run("scripts/proc.sh", [String(process.pid)])
    expect(res.text).not.toContain(SECRET)
    const count = Number(
      res.text
        .split("stdout:\n")[1]!
        .split("\n")
        .find((l) => /^\d+$/.test(l.trim()))
    )
    expect(count).toBeGreaterThan(0)
    expect(count).toBeLessThan(10)
    expect(res.text).toContain(`/proc/${process.pid}/environ: No such file or directory`)
  })

  it("17. the environment holds a few fixed variables, none of the host's", async () => {
    const res = await run("scripts/env.sh")
    expect(res.text).not.toContain(SECRET)
    const names = res.text
      .split("stdout:\n")[1]!
      .split("\n")
      .map((l) => l.split("=")[0]!)
      .filter((n) => /^[A-Z_]+$/.test(n))
    for (const name of names)
      expect([
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "SKILL_DIR",
        "PYTHONPATH",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_"
      ]).toContain(name)
  })

  it("18. cannot signal a host process", async () => {
    const res = await run("scripts/kill.sh", [String(process.pid)])
    expect(res.text).toMatch(/No such process/)
    expect(process.kill(process.pid, 0)).toBe(true) // this process is alive
  })

  it("19. filling the scratch directory stops at its size", async () => {
    const res = await run("scripts/fill.sh")
    expect(res.text).toMatch(/No space left on device|File size limit exceeded/)
    expect(res.text).not.toContain("100000000 ")
  })

  it("20. cannot remount its folder writable, mount, or gain privileges", async () => {
    const res = await run("scripts/mount.sh")
    expect(res.text).not.toMatch(/^\s*$/)
    expect(res.text).toMatch(/Read-only file system/)
    await expect(stat(join(skills, "hostile/x"))).rejects.toThrow()
  })

  it("21. sees no disk or memory device", async () => {
    const res = await run("scripts/devices.sh")
    expect(res.text).toContain("/dev/sda: No such file or directory")
    expect(res.text).toContain("/dev/mem: No such file or directory")
  })

  it("22. a script path that leads out, or a link among the scripts, is refused before anything runs", async () => {
    for (const script of [
      "../victim/SKILL.md",
      "/etc/passwd",
      "scripts/../../victim/SKILL.md",
      "scripts/outside.sh"
    ]) {
      const res = await harness.run({ script })
      expect(res.isError, script).toBe(true)
      expect(res.text).toContain("is not a script of the 'hostile' skill")
    }
  })

  it("23. an input file whose path leads out is refused", async () => {
    for (const path of ["../escape.txt", "/etc/cron.d/x", "a/../../b", "..\\..\\x"]) {
      const res = await harness.run({ script: "scripts/cat.sh", files: [{ path, text: "x" }] })
      expect(res.isError, path).toBe(true)
      expect(res.text).toContain("is not a path inside the scratch directory")
    }
  })

  it("24. an aborted turn stops the script", async () => {
    const controller = new AbortController()
    const pending = run("scripts/sleep.sh", [], turnContext({ signal: controller.signal }))
    controller.abort()
    const res = await pending
    expect(res.text).toContain("was stopped: the turn was aborted")
  })
})
