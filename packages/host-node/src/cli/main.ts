#!/usr/bin/env node
/**
 * `plugboard <command>` (`pnpm plugboard <command>` from the repository root):
 * init, serve, mcp, token, credits, chat, console, and inspect.
 *
 * Each command's modules are imported only when that command runs: the server stack (LangChain,
 * LangGraph, SQLite, ucanto) costs seconds to load, and `inspect` is an offline tool that needs
 * none of it.
 */
import type { CliIO } from "./Commands.js"
import { asksForHelp, commandHelp, commandList } from "./Help.js"

const usage = async (): Promise<string> => {
  const { VARIABLES } = await import("../Config.js")
  const name = Math.max(...VARIABLES.map((v) => v.name.length))
  const value = Math.max(...VARIABLES.filter((v) => v.default.length <= 24).map((v) => v.default.length))
  const rows = VARIABLES.map((v) => `  ${v.name.padEnd(name)}  ${v.default.padEnd(value)}  ${v.meaning}`)
  return `${commandList()}\nEnvironment (all optional):\n${rows.join("\n")}\n`
}

const io: CliIO = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
  // `pnpm plugboard` runs in the repository root; INIT_CWD is where the user typed it.
  cwd: process.env.INIT_CWD ?? process.cwd()
}

/** Runs a server-side command, turning its known failures into lines and exit codes. */
const serverCommand = async (
  name: "serve" | "token" | "credits" | "chat" | "console",
  argv: ReadonlyArray<string>
): Promise<number> => {
  const commands = await import("./Commands.js")
  const { OracleBootError } = await import("../App.js")
  try {
    return await (name === "console" ? commands.openConsole(argv, io) : commands[name](argv, io))
  } catch (error) {
    if (error instanceof OracleBootError) {
      for (const line of error.lines) io.err(`${line}\n`)
      return 1
    }
    if (error instanceof commands.UsageError) {
      io.err(`${error.message} Run 'plugboard ${name} --help' for its options.\n`)
      return 2
    }
    if (error instanceof commands.ListenError) {
      io.err(`${error.message}\n`)
      return 1
    }
    if (error instanceof commands.ModuleLoadError) {
      io.err(`[boot-error] ${error.message}\n`)
      return 1
    }
    throw error
  }
}

/** `plugboard mcp`: the same failures as the server commands, worded the same. */
const mcpCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const { mcp } = await import("./Mcp.js")
  const { OracleBootError } = await import("../App.js")
  const { ModuleLoadError } = await import("./LoadModule.js")
  const { UsageError } = await import("./UsageError.js")
  try {
    return await mcp(argv, io)
  } catch (error) {
    if (error instanceof OracleBootError) {
      for (const line of error.lines) io.err(`${line}\n`)
      return 1
    }
    if (error instanceof UsageError) {
      io.err(`${error.message} Run 'plugboard mcp --help' for its options.\n`)
      return 2
    }
    if (error instanceof ModuleLoadError) {
      io.err(`[boot-error] ${error.message}\n`)
      return 1
    }
    throw error
  }
}

const run = async (argv: ReadonlyArray<string>): Promise<number> => {
  const [command, ...rest] = argv
  switch (command) {
    case "serve":
    case "token":
    case "credits":
    case "chat":
    case "console":
      if (asksForHelp(rest)) {
        io.out(commandHelp(command))
        return 0
      }
      return serverCommand(command, rest)
    case "init": {
      if (asksForHelp(rest)) {
        io.out(commandHelp(command))
        return 0
      }
      const { init } = await import("../init/Init.js")
      return init(rest, io)
    }
    case "mcp": {
      if (asksForHelp(rest)) {
        io.out(commandHelp(command))
        return 0
      }
      return mcpCommand(rest)
    }
    case "inspect": {
      const { runInspect } = await import("../inspect/index.js")
      return runInspect(rest)
    }
    case undefined:
    case "help":
    case "--help":
    case "-h":
      io.out(await usage())
      return command === undefined ? 2 : 0
    default:
      io.err(`Unknown command '${command}'.\n\n${await usage()}`)
      return 2
  }
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
    // A stopped server may leave a library's idle handle behind; it must not keep the process up.
    if (process.argv[2] === "serve" || process.argv[2] === "mcp")
      setTimeout(() => process.exit(code), 500).unref()
  },
  (error: unknown) => {
    io.err(`${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  }
)
