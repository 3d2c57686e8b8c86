#!/usr/bin/env node
import { describe } from "@plugboard/core"
/**
 * `plugboard <command>` (`pnpm plugboard <command>` from the repository root):
 * init, serve, mcp, token, credits, chat, console, inspect, and scripted-model.
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
  cwd: process.env.INIT_CWD ?? process.cwd(),
  ask: async (question) => (await import("./Ask.js")).askLine(process.stdin, process.stdout, question)
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

/**
 * A command in a module of its own (`mcp`, `scripted-model`): only that module is loaded, and its
 * known failures are worded as the server commands' (matched by tag, so that no server module is
 * loaded to recognise them).
 */
const ownCommand = async (name: string, command: () => Promise<number>): Promise<number> => {
  try {
    return await command()
  } catch (error) {
    const tag = (error as { readonly _tag?: unknown } | null)?._tag
    if (tag === "OracleBootError") {
      for (const line of (error as { readonly lines: ReadonlyArray<string> }).lines) io.err(`${line}\n`)
      return 1
    }
    if (tag === "UsageError") {
      io.err(`${(error as Error).message} Run 'plugboard ${name} --help' for its options.\n`)
      return 2
    }
    if (tag === "ModuleLoadError") {
      io.err(`[boot-error] ${(error as Error).message}\n`)
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
    case "inspect": {
      const { runInspect } = await import("../inspect/index.js")
      return runInspect(rest)
    }
    case "mcp":
    case "scripted-model": {
      if (asksForHelp(rest)) {
        io.out(commandHelp(command))
        return 0
      }
      return command === "mcp"
        ? ownCommand(command, async () => (await import("./Mcp.js")).mcp(rest, io))
        : ownCommand(command, async () => (await import("./ScriptedModel.js")).scriptedModel(rest, io))
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
    if (["serve", "mcp", "scripted-model"].includes(process.argv[2] ?? ""))
      setTimeout(() => process.exit(code), 500).unref()
  },
  (error: unknown) => {
    io.err(`${describe(error)}\n`)
    process.exitCode = 1
  }
)
