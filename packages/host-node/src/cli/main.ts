#!/usr/bin/env node
/**
 * `plugboard <command>` (`pnpm plugboard <command>` from the repository root):
 * serve, token, credits, chat, and inspect.
 */
import { OracleBootError } from "../App.js"
import { VARIABLES } from "../Config.js"
import { type CliIO, chat, credits, ModuleError, serve, token, UsageError } from "./Commands.js"

const USAGE = `Usage: plugboard <command>

  serve [module] [--port N] [--host H]   run the oracle (module exports the plugins; default: the examples)
  token [--ttl seconds] [--audience did] print a UCAN invocation of the local user for the local oracle
  credits [balance | top-up <amount>] [--did did]   read or top up a user's credits (default: the local user)
  chat "<message>" [--url URL] [--session ID]       stream one turn from a running oracle
  inspect [module] ...                   offline report of a catalog (see plugboard inspect --help)

Environment (all optional):
${VARIABLES.map((v) => `  ${v.name.padEnd(56)} ${v.default.padEnd(22)} ${v.meaning}`).join("\n")}
`

const io: CliIO = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
  // `pnpm plugboard` runs in the repository root; INIT_CWD is where the user typed it.
  cwd: process.env.INIT_CWD ?? process.cwd()
}

const run = async (argv: ReadonlyArray<string>): Promise<number> => {
  const [command, ...rest] = argv
  switch (command) {
    case "serve":
      return serve(rest, io)
    case "token":
      return token(rest, io)
    case "credits":
      return credits(rest, io)
    case "chat":
      return chat(rest, io)
    case "inspect": {
      // Written alongside this CLI; loaded only when asked for.
      const inspect = (await import("../inspect/index.js")) as {
        runInspect: (argv: ReadonlyArray<string>) => Promise<number>
      }
      return inspect.runInspect(rest)
    }
    case undefined:
    case "help":
    case "--help":
    case "-h":
      io.out(USAGE)
      return command === undefined ? 2 : 0
    default:
      io.err(`Unknown command '${command}'.\n\n${USAGE}`)
      return 2
  }
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
    // A stopped server may leave a library's idle handle behind; it must not keep the process up.
    if (process.argv[2] === "serve") setTimeout(() => process.exit(code), 500).unref()
  },
  (error: unknown) => {
    if (error instanceof OracleBootError) {
      for (const line of error.lines) io.err(`${line}\n`)
      process.exitCode = 1
    } else if (error instanceof UsageError) {
      io.err(`${error.message}\n`)
      process.exitCode = 2
    } else if (error instanceof ModuleError) {
      io.err(`[boot-error] ${error.message}\n`)
      process.exitCode = 1
    } else {
      io.err(`${error instanceof Error ? error.message : String(error)}\n`)
      process.exitCode = 1
    }
  }
)
