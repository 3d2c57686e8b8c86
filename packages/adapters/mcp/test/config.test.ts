import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import * as Config from "../src/Config.js"

const fixtures = resolve(import.meta.dirname, "fixtures-config")

const one = (server: unknown) => Config.parse({ mcpServers: { s: server } })

describe("Config.readFile", () => {
  it("reads a good file: stdio and HTTP servers, plugboard's keys, disabled servers skipped", async () => {
    const file = join(fixtures, "good.json")
    const config = await Config.readFile(file)
    expect(config.errors).toEqual([])
    expect(config.warnings).toEqual([])
    expect(config.servers.map((s) => s.name)).toEqual(["everything", "github", "people"])
    const [everything, github, people] = config.servers
    expect(everything).toEqual({
      name: "everything",
      transport: {
        kind: "stdio",
        command: "npx",
        args: ["-y", "@modelcontextprotocol/server-everything"],
        env: { LOG_LEVEL: "warn" },
        // Relative to the file's folder, not to the process's.
        cwd: join(fixtures, "work")
      },
      manifest: { title: "Everything", tags: ["demo"] },
      tools: { deny: ["longRunningOperation"], visibility: { echo: "always" } },
      timeoutMs: 5000
    })
    expect(github).toEqual({
      name: "github",
      transport: { kind: "http", url: "https://example.test/mcp", headers: { "X-Api-Key": "secret-key" } },
      timeoutMs: Config.DEFAULT_TIMEOUT_MS
    })
    expect(people?.forwardUcan).toEqual({ header: "X-Ucan-Invocation" })
  })

  it("names the file, line and column of a JSON syntax error", async () => {
    const trailing = join(fixtures, "trailing-comma.json")
    const a = await Config.readFile(trailing)
    expect(a.servers).toEqual([])
    expect(a.errors).toHaveLength(1)
    expect(a.errors[0]).toMatch(new RegExp(`^${trailing.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3:28: `))
    // V8 gives no position for this one; the scanner finds it.
    const token = join(fixtures, "bad-token.json")
    const b = await Config.readFile(token)
    expect(b.errors[0]).toContain(`${token}:3:26:`)
  })

  it("does not echo the file's text in a syntax error (it can hold secrets)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "plugboard-config-"))
    try {
      const file = join(dir, "mcp.json")
      await writeFile(
        file,
        '{"mcpServers": {"a": {"url": "http://x", "headers": {"Authorization": hunter2}}}}'
      )
      const { errors } = await Config.readFile(file)
      expect(errors[0]).toContain(`${file}:1:`)
      expect(errors[0]).not.toContain("hunter2")
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it("says a missing file does not exist", async () => {
    const { errors } = await Config.readFile(join(fixtures, "absent.json"))
    expect(errors).toEqual([`The MCP config ${join(fixtures, "absent.json")} does not exist.`])
  })
})

describe("Config.parse", () => {
  it("names every wrong key by its path", () => {
    const { servers, errors } = Config.parse({
      mcpServers: {
        github: { command: "gh", args: ["a", 2], env: { TOKEN: 1 }, cwd: 3, timeoutMs: -1 },
        web: { url: "ftp://x", headers: { "Bad Header": "v", Ok: 2 }, manifest: [], tools: { allow: "x" } },
        vis: { command: "x", tools: { visibility: { echo: "loud" } } }
      }
    })
    expect(servers).toEqual([])
    expect(errors).toEqual(
      expect.arrayContaining([
        "mcpServers.github.args[1] must be a string, not number.",
        "mcpServers.github.env.TOKEN must be a string, not number.",
        "mcpServers.github.cwd must be a non-empty string.",
        "mcpServers.github.timeoutMs must be a positive whole number of milliseconds.",
        "mcpServers.web.url must be an http: or https: URL, not ftp:.",
        "mcpServers.web.headers.Ok must be a string, not number.",
        "mcpServers.web.headers: 'Bad Header' is not a valid HTTP header name.",
        "mcpServers.web.manifest must be an object of manifest fields, not a list.",
        "mcpServers.web.tools.allow must be a list of strings, not string.",
        "mcpServers.vis.tools.visibility.echo must be one of always, on-demand, silent."
      ])
    )
    expect(errors).toHaveLength(10)
  })

  it("keeps the good servers when another one is wrong", () => {
    const { servers, errors } = Config.parse({ mcpServers: { good: { command: "x" }, bad: { command: 1 } } })
    expect(servers.map((s) => s.name)).toEqual(["good"])
    expect(errors).toEqual(["mcpServers.bad.command must be a non-empty string."])
  })

  it("warns about unknown keys, at the top, per server and under tools, and ignores them", () => {
    const { servers, errors, warnings } = Config.parse({
      mcpServers: { s: { command: "x", autoApprove: [], tools: { allowed: [] } } },
      inputs: []
    })
    expect(errors).toEqual([])
    expect(servers).toHaveLength(1)
    expect(warnings).toHaveLength(3)
    expect(warnings[0]).toMatch(/^inputs is not a known key of the MCP config/)
    expect(warnings[1]).toMatch(/^mcpServers\.s\.autoApprove is not a known key and is ignored/)
    expect(warnings[2]).toMatch(/^mcpServers\.s\.tools\.allowed is not a known key/)
  })

  it("refuses a name that is not kebab-case, suggesting one", () => {
    const { servers, errors } = Config.parse({ mcpServers: { GitHub_Issues: { command: "x" } } })
    expect(servers).toEqual([])
    expect(errors[0]).toContain(
      "mcpServers.GitHub_Issues: the server's name is its plugin's name and must be kebab-case"
    )
    expect(errors[0]).toContain("'git-hub-issues'")
  })

  it("refuses both command and url, and neither", () => {
    expect(one({ command: "x", url: "http://x" }).errors).toEqual([
      "mcpServers.s: give either 'command' (stdio) or 'url' (HTTP), not both."
    ])
    expect(one({ args: [] }).errors[0]).toMatch(/^mcpServers\.s: give either 'command'/)
  })

  it("refuses a key of the other transport", () => {
    expect(one({ command: "x", headers: {} }).errors).toEqual([
      "mcpServers.s.headers is for HTTP servers ('url'), not with 'command'."
    ])
    expect(one({ url: "http://x", args: ["a"] }).errors).toEqual([
      "mcpServers.s.args is for stdio servers ('command'), not with 'url'."
    ])
  })

  it("checks a client's 'type' against the transport, and refuses the old SSE transport", () => {
    expect(one({ type: "stdio", command: "x" }).errors).toEqual([])
    expect(one({ type: "streamable-http", url: "http://x" }).errors).toEqual([])
    expect(one({ type: "http", command: "x" }).errors[0]).toContain(
      "mcpServers.s.type 'http' does not fit 'command'"
    )
    expect(one({ type: "sse", url: "http://x/sse" }).errors[0]).toContain("deprecated HTTP+SSE transport")
  })

  it("refuses forwardUcan on a stdio server, and beside a static header of the same name", () => {
    expect(one({ command: "x", forwardUcan: true }).errors).toEqual([
      "mcpServers.s.forwardUcan is only for HTTP servers ('url'): a stdio server has no per-request headers."
    ])
    const clash = one({ url: "http://x", headers: { authorization: "Bearer static" }, forwardUcan: true })
    expect(clash.servers).toEqual([])
    expect(clash.errors[0]).toContain(
      "mcpServers.s.forwardUcan sends each user's invocation in 'Authorization'"
    )
    expect(clash.errors[0]).toContain("mcpServers.s.headers.authorization")
    // Another header name is fine.
    const ok = one({
      url: "http://x",
      headers: { authorization: "Bearer static" },
      forwardUcan: { header: "X-Ucan" }
    })
    expect(ok.errors).toEqual([])
    expect(one({ url: "http://x", forwardUcan: true }).servers[0]?.forwardUcan).toEqual({
      header: "Authorization"
    })
    expect(one({ url: "http://x", forwardUcan: { audience: "nope" } }).errors).toEqual([
      "mcpServers.s.forwardUcan.audience must be a DID (did:method:...)."
    ])
    expect(one({ url: "http://x", forwardUcan: false }).servers[0]?.forwardUcan).toBeUndefined()
    expect(one({ url: "http://x", forwardUcan: { audiance: "did:web:x" } }).warnings).toEqual([
      "mcpServers.s.forwardUcan.audiance is not a known key and is ignored (known: audience, header)."
    ])
  })

  it("skips a disabled server without checking it, and refuses a non-boolean 'disabled'", () => {
    const off = Config.parse({
      mcpServers: { Off: { disabled: true, url: 3 }, on: { command: "x", disabled: false } }
    })
    expect(off.errors).toEqual([])
    expect(off.servers.map((s) => s.name)).toEqual(["on"])
    expect(one({ command: "x", disabled: "yes" }).errors).toEqual([
      "mcpServers.s.disabled must be true or false."
    ])
  })

  it("refuses a config that is not an object or has no mcpServers", () => {
    expect(Config.parse([]).errors[0]).toContain("must be a JSON object")
    expect(Config.parse({}, { file: "a.json" }).errors).toEqual([
      "The MCP config (in a.json) has no 'mcpServers' object."
    ])
    expect(Config.parse({ mcpServers: [] }).errors[0]).toContain(
      "mcpServers must be an object of servers by name"
    )
  })

  it("names the file in per-server errors when it knows it", () => {
    const { errors } = Config.parse({ mcpServers: { s: { command: 1 } } }, { file: "mcp.json" })
    expect(errors).toEqual(["mcpServers.s.command must be a non-empty string (in mcp.json)."])
  })
})

describe("Config.syntaxErrorAt", () => {
  it("finds the offset V8 reports, for the errors V8 gives a position for", () => {
    for (const text of [
      '{"a": 1,}',
      '{"a" 1}',
      '{"a": 1',
      "[1 2]",
      '{"a":1} x',
      '{"a": "x\n"}',
      '{"a": 01}',
      '"\\u12g4"'
    ]) {
      let position: number | undefined
      try {
        JSON.parse(text)
      } catch (e) {
        const m = /at position (\d+)/.exec((e as Error).message)
        position = m === null ? undefined : Number(m[1])
      }
      if (position !== undefined) expect([text, Config.syntaxErrorAt(text)]).toEqual([text, position])
    }
  })
})
