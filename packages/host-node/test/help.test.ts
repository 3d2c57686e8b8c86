import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { commandHelp, commandList } from "../src/cli/Help.js"
import { runCli } from "./runCli.js"

const cwd = mkdtempSync(join(tmpdir(), "plugboard-help-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const plugboard = (...args: ReadonlyArray<string>) => runCli(cwd, ...args)

describe("plugboard <command> --help", () => {
  it("serve's page, golden", () => {
    expect(commandHelp("serve")).toBe(
      [
        "Usage: plugboard serve [module] [options]",
        "",
        "Run the oracle on the plugins the module exports (default: the examples' catalog).",
        "",
        "Options:",
        "  --port N      listen on port N (default PORT, 3000; 0 = any free port)",
        "  --host H      listen on address H (default HOST, 127.0.0.1)",
        "  --mcp FILE    also mount the MCP servers of FILE (default MCP_CONFIG)",
        "  --skills DIR  also mount the Agent Skills of DIR (default SKILLS_DIR)",
        "  -h, --help    this text",
        "",
        "Configuration comes from the environment: plugboard help lists every variable.",
        ""
      ].join("\n")
    )
  })

  for (const command of ["init", "serve", "mcp", "chat", "console", "token", "credits", "scripted-model"]) {
    it(`${command} --help and -h print its page and exit 0, starting nothing`, async () => {
      for (const flag of ["--help", "-h"]) {
        const { code, stdout, stderr } = await plugboard(command, flag)
        expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
        expect(stdout).toBe(commandHelp(command))
      }
      // No server data, no keys: help runs nothing.
      expect(readdirSync(cwd)).toEqual([])
    }, 60_000)
  }

  it("plugboard help lists every command, one aligned line each, then the environment", async () => {
    const { code, stdout } = await plugboard("help")
    expect(code).toBe(0)
    expect(stdout.startsWith(commandList())).toBe(true)
    const lines = commandList()
      .split("\n")
      .filter((l) => l.startsWith("  "))
    expect(lines.map((l) => l.trim().split(" ")[0])).toEqual([
      "init",
      "serve",
      "mcp",
      "chat",
      "console",
      "token",
      "credits",
      "inspect",
      "scripted-model"
    ])
    // Every summary starts in the same column (two spaces or more after the command's usage).
    const columns = lines.map((l) => {
      const gap = / {2,}(?=\S)/.exec(l.slice(2))!
      return 2 + gap.index + gap[0].length
    })
    expect(new Set(columns).size).toBe(1)
    expect(stdout).toContain("Environment (all optional):")
  }, 60_000)

  it("an unknown option is a usage error that names the help to read", async () => {
    const { code, stderr } = await plugboard("chat", "hello", "--bogus", "1")
    expect(code).toBe(2)
    expect(stderr).toBe("Unknown option --bogus. Run 'plugboard chat --help' for its options.\n")
  }, 60_000)
})
