/**
 * The operator's allowed hosts (`allowHosts`, SKILLS_RUN_HOSTS; docs/skills-that-run.md#the-sandbox):
 * in the real bubblewrap, a Python script reaches an allowed local server through the proxy, and
 * nothing else: a host off the list gets a 403 naming it while its server sees nothing, a direct
 * connection still fails (the network namespace is the sandbox's own), and without a list there
 * is no network at all. The proxy and its folder go when the run ends, also when it is killed.
 * The host matcher is checked with properties.
 */
import { chmod, mkdtemp, readdir, rm } from "node:fs/promises"
import { createServer as createHttpServer, type Server as HttpServer } from "node:http"
import { connect, createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type AllowedHost,
  canonicalHost,
  isAllowed,
  parseAllowHost,
  parseAllowHosts
} from "../src/AllowHosts.js"
import { runInSandbox } from "../src/Sandbox.js"
import { skillText, writeFiles } from "./helpers.js"
import { BWRAP, PYTHON, runScriptOf, TEST_LIMITS } from "./sandboxHelpers.js"

const SCRIPTS: Readonly<Record<string, string>> = {
  "net/SKILL.md": skillText("name: net\ndescription: Fetches things. Use when asked to fetch."),
  "net/scripts/fetch.py": `import os, sys, urllib.request, urllib.error
print("proxy:", os.environ.get("HTTP_PROXY"), os.environ.get("HTTPS_PROXY"), os.environ.get("NO_PROXY"))
try:
    with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
        print("status:", r.status)
        print(r.read().decode())
except urllib.error.HTTPError as e:
    print("status:", e.code)
    print(e.read().decode())
except OSError as e:
    print("failed:", e)
`,
  // CONNECT by hand, as an HTTPS client does, then plain HTTP inside the tunnel.
  "net/scripts/tunnel.py": `import os, socket, sys, time, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((proxy.hostname, proxy.port), timeout=5)
s.sendall(("CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (sys.argv[1], sys.argv[1])).encode())
f = s.makefile("rb")
status = f.readline().decode().strip()
print("connect:", status)
while f.readline() not in (b"\\r\\n", b""):
    pass
if len(sys.argv) > 2:
    print("holding", flush=True)
    time.sleep(600)
if status.split(" ")[1] == "200":
    s.sendall(b"GET /tunnel HTTP/1.1\\r\\nHost: tunnel\\r\\nConnection: close\\r\\n\\r\\n")
print(f.read().decode())
`,
  "net/scripts/direct.py": `import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
    print("connected")
except OSError as e:
    print("refused:", e)
`
}

/** A promise and its resolver, for waiting on an event without sleeping. */
const deferred = <A>() => {
  let resolve!: (a: A) => void
  const promise = new Promise<A>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

const proxyDirs = async (): Promise<string[]> =>
  (await readdir(tmpdir())).filter((n) => n.startsWith("plugboard-proxy-")).sort()

const listen = async <S extends Server | HttpServer>(server: S): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return (server.address() as { port: number }).port
}

let skills: string
let allowed: HttpServer
let allowedPort: number
const allowedSeen: Array<{ url: string; headers: Record<string, unknown> }> = []
let onAllowed: (() => Promise<void>) | undefined
let other: HttpServer
let otherPort: number
let otherConnections = 0
let raw: Server
let rawPort: number
let rawConnection = deferred<Socket>()

beforeAll(async () => {
  if (BWRAP === undefined || PYTHON === undefined) return
  // Not the per-test folder of helpers.ts: this one lives for the whole file. Readable by the
  // sandbox's user (uid 65534 when the host is root).
  skills = await mkdtemp(join(tmpdir(), "plugboard-network-"))
  await chmod(skills, 0o755)
  await writeFiles(skills, SCRIPTS)
  allowed = createHttpServer(async (req, res) => {
    allowedSeen.push({ url: req.url ?? "", headers: req.headers })
    await onAllowed?.()
    res.end(`hello from the host: ${req.url}`)
  })
  allowedPort = await listen(allowed)
  other = createHttpServer((_req, res) => res.end("should not be reached"))
  other.on("connection", () => otherConnections++)
  otherPort = await listen(other)
  raw = createServer((socket) => rawConnection.resolve(socket))
  rawPort = await listen(raw)
})

afterAll(async () => {
  if (skills !== undefined) await rm(skills, { recursive: true, force: true })
  for (const server of [allowed, other, raw]) {
    if (server === undefined) continue
    ;(server as HttpServer).closeAllConnections?.()
    await new Promise((resolve) => server.close(resolve))
  }
})

describe.skipIf(BWRAP === undefined || PYTHON === undefined)("allowed hosts, in the real bubblewrap", () => {
  const harness = (allowHosts?: ReadonlyArray<string>, limits = {}) =>
    runScriptOf(skills, limits, allowHosts === undefined ? {} : { allowHosts })

  it("(a) a Python script reaches the allowed host through the proxy, over HTTP and a CONNECT tunnel", async () => {
    const { spec, run } = await harness([`127.0.0.1:${allowedPort}`])
    expect(spec.tools.find((t) => t.name === "run_script")!.description).toContain(
      `there is no network but HTTP(S), through the proxy in HTTP_PROXY/HTTPS_PROXY, to: 127.0.0.1:${allowedPort}.`
    )
    const before = allowedSeen.length
    const res = await run({ script: "scripts/fetch.py", args: [`http://127.0.0.1:${allowedPort}/hello`] })
    expect(res.isError, res.text).toBe(false)
    expect(res.text).toContain("proxy: http://127.0.0.1:3128 http://127.0.0.1:3128 None")
    expect(res.text).toContain("status: 200")
    expect(res.text).toContain("hello from the host: /hello")
    expect(allowedSeen.slice(before).map((s) => s.url)).toEqual(["/hello"])
    // The proxy's own headers stay with the proxy.
    expect(allowedSeen.at(-1)!.headers["proxy-connection"]).toBeUndefined()
    const tunnel = await run({ script: "scripts/tunnel.py", args: [`127.0.0.1:${allowedPort}`] })
    expect(tunnel.text).toContain("connect: HTTP/1.1 200 Connection Established")
    expect(tunnel.text).toContain("hello from the host: /tunnel")
  })

  it("(b) a host off the list gets a 403 naming it, and its server sees nothing", async () => {
    const { run } = await harness([`127.0.0.1:${allowedPort}`, "*.example.test"])
    const cases = [
      [`http://127.0.0.1:${otherPort}/x`, `127.0.0.1:${otherPort}`],
      [`http://localhost:${otherPort}/x`, `localhost:${otherPort}`],
      [`http://example.test:${otherPort}/`, `example.test:${otherPort}`]
    ] as const
    for (const [url, named] of cases) {
      const res = await run({ script: "scripts/fetch.py", args: [url] })
      expect(res.text, url).toContain("status: 403")
      expect(res.text, url).toContain(`${named} is not in the allowed list of hosts of this sandbox.`)
    }
    const tunnel = await run({ script: "scripts/tunnel.py", args: [`127.0.0.1:${otherPort}`] })
    expect(tunnel.text).toContain("connect: HTTP/1.1 403 Forbidden")
    expect(tunnel.text).toContain(
      `127.0.0.1:${otherPort} is not in the allowed list of hosts of this sandbox.`
    )
    expect(otherConnections).toBe(0)
  })

  it("(c) a connection that bypasses the proxy still fails: the network namespace is the sandbox's", async () => {
    const { run } = await harness([`127.0.0.1:${allowedPort}`])
    const before = allowedSeen.length
    const res = await run({ script: "scripts/direct.py", args: [String(allowedPort)] })
    expect(res.text).toMatch(/refused: .*(Connection refused|Errno 111)/)
    expect(res.text).not.toContain("connected")
    expect(allowedSeen.length).toBe(before)
  })

  it("(d) without allowed hosts the same script has no network and no proxy variables", async () => {
    for (const allowHosts of [undefined, [], [" "]]) {
      const { spec, run } = await harness(allowHosts)
      expect(spec.tools.find((t) => t.name === "run_script")!.description).toContain("there is no network.")
      const before = allowedSeen.length
      const res = await run({ script: "scripts/fetch.py", args: [`http://127.0.0.1:${allowedPort}/hello`] })
      expect(res.text).toContain("proxy: None None None")
      expect(res.text).toMatch(/failed: .*(Connection refused|Errno 111)/)
      expect(allowedSeen.length).toBe(before)
    }
  })

  it("(e) the proxy and its folder are gone after the run, also after one killed by the time bound", async () => {
    const before = await proxyDirs()
    let during: string[] = []
    onAllowed = async () => {
      during = await proxyDirs()
    }
    try {
      const { run } = await harness([`127.0.0.1:${allowedPort}`, `127.0.0.1:${rawPort}`], {
        timeoutMs: 3_000
      })
      const ok = await run({ script: "scripts/fetch.py", args: [`http://127.0.0.1:${allowedPort}/e`] })
      expect(ok.text).toContain("hello from the host: /e")
      const made = during.filter((d) => !before.includes(d))
      expect(made).toHaveLength(1)
      expect(await proxyDirs()).not.toContain(made[0])

      // A run that holds a tunnel open until the time bound kills it.
      rawConnection = deferred<Socket>()
      const killed = run({ script: "scripts/tunnel.py", args: [`127.0.0.1:${rawPort}`, "hold"] })
      const upstream = await rawConnection.promise
      const closed = new Promise<void>((resolve) => upstream.on("close", () => resolve()))
      const live = (await proxyDirs()).filter((d) => !before.includes(d))
      expect(live).toHaveLength(1)
      const socketPath = `${tmpdir()}/${live[0]}/proxy.sock`
      const res = await killed
      expect(res.text).toContain("was stopped after 3 s (the time limit of a run)")
      await closed // the tunnel's host side was torn down
      expect((await proxyDirs()).filter((d) => !before.includes(d))).toEqual([])
      const refused = await new Promise<string>((resolve) => {
        const s = connect(socketPath)
        s.on("connect", () => resolve("connected"))
        s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"))
      })
      expect(refused).toBe("ENOENT")
    } finally {
      onAllowed = undefined
    }
  })

  it("refuses an entry that is not a host, before anything runs", async () => {
    await expect(harness(["ok.example", "http://x.example/"])).rejects.toThrow(
      /"http:\/\/x\.example\/" is not a host to allow/
    )
    await expect(
      runInSandbox({
        bwrap: BWRAP!,
        folder: skills,
        argv: ["true"],
        files: [],
        limits: TEST_LIMITS,
        allowHosts: ["a:0"]
      })
    ).rejects.toThrow(RangeError)
  })
})

describe("the host matcher (property)", () => {
  const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,6}[a-z0-9]$/)
  const name = fc.array(label, { minLength: 1, maxLength: 4 }).map((ls) => [...ls, "test"].join("."))
  const port = fc.integer({ min: 1, max: 65535 })
  const one = (entry: string): AllowedHost => {
    const parsed = parseAllowHost(entry)
    if (typeof parsed === "string") throw new Error(parsed)
    return parsed
  }

  it("an exact entry matches only itself, on any port; with a port, only that port", () => {
    fc.assert(
      fc.property(name, name, port, port, (a, b, p, q) => {
        expect(isAllowed([one(a)], b, p)).toBe(a === b)
        expect(isAllowed([one(`${a}:${p}`)], a, q)).toBe(p === q)
        expect(isAllowed([one(a.toUpperCase())], a, p)).toBe(true)
      })
    )
  })

  it("*.name matches its subdomains at any depth, and neither name itself nor a look-alike", () => {
    fc.assert(
      fc.property(
        name,
        fc.array(label, { minLength: 1, maxLength: 3 }),
        label,
        port,
        (base, subs, extra, p) => {
          const hosts = [one(`*.${base}`)]
          expect(isAllowed(hosts, `${subs.join(".")}.${base}`, p)).toBe(true)
          expect(isAllowed(hosts, base, p)).toBe(false)
          expect(isAllowed(hosts, `${extra}${base}`, p)).toBe(false)
          expect(isAllowed(hosts, `${subs[0]}.${base}.evil`, p)).toBe(false)
        }
      )
    )
  })

  it("an IP matches in its canonical form, as the proxy connects to it", () => {
    fc.assert(
      fc.property(fc.ipV4(), port, (ip, p) => {
        expect(isAllowed([one(ip)], canonicalHost(ip)!, p)).toBe(true)
      })
    )
    expect(canonicalHost("127.1")).toBe("127.0.0.1")
    expect(isAllowed([one("127.0.0.1:80")], canonicalHost("0x7f.1")!, 80)).toBe(true)
    expect(isAllowed([one("[::1]:443")], canonicalHost("[0:0::1]")!, 443)).toBe(true)
    expect(isAllowed([one("::1")], canonicalHost("[::1]")!, 8080)).toBe(true)
  })

  it("refuses what is not a host, quoting it, and keeps the rest", () => {
    const bad = [
      "*",
      "*.",
      "a..b",
      "x:0",
      "x:65536",
      "x:",
      "x:y",
      "[::1",
      "[1.2.3.4]:80",
      "a b",
      "http://x",
      "1.2.3",
      "-a.test",
      "*.1.2.3.4",
      "a/b",
      "ü.test"
    ]
    const read = parseAllowHosts(["ok.test", ...bad, "", "10.0.0.1:8080"])
    expect(read.hosts.map((h) => h.entry)).toEqual(["ok.test", "10.0.0.1:8080"])
    expect(read.errors).toHaveLength(bad.length)
    for (const [i, entry] of bad.entries())
      expect(read.errors[i]).toBe(
        `${JSON.stringify(entry)} is not a host to allow: an entry is host or host:port (a DNS name, an IP address, [IPv6]:port, or *.name for its subdomains; port 1 to 65535).`
      )
  })
})
