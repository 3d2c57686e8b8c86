/**
 * The `plugboard` commands' help: one table, rendered as the command list (`plugboard help`) and
 * as each command's own page (`plugboard <command> --help`), so the two never disagree. `inspect`
 * keeps its longer page next to its parser (`inspect/Args.ts`).
 */

/** One option of a command. */
interface Option {
  readonly flag: string
  readonly meaning: string
}

/** One command: how it is called, what it does, and its options. */
interface Command {
  readonly name: string
  readonly args: string
  readonly summary: string
  readonly options: ReadonlyArray<Option>
  /** Whether its configuration comes from the environment too (default: yes). */
  readonly readsEnvironment?: boolean
}

const COMMANDS: ReadonlyArray<Command> = [
  {
    name: "init",
    args: "[dir]",
    summary: "scaffold a plugin project in dir (default: here), which must be new or empty",
    options: [
      {
        flag: "--from DIR",
        meaning:
          "install the @plugboard packages from the tarballs in DIR (scripts/pack.sh packs them), copied into vendor/; default from a checkout: packed from it"
      }
    ]
  },
  {
    name: "serve",
    args: "[module]",
    summary: "run the oracle on the plugins the module exports (default: the examples' catalog)",
    options: [
      { flag: "--port N", meaning: "listen on port N (default PORT, 3000; 0 = any free port)" },
      { flag: "--host H", meaning: "listen on address H (default HOST, 127.0.0.1)" },
      { flag: "--mcp FILE", meaning: "also mount the MCP servers of FILE (default MCP_CONFIG)" },
      { flag: "--skills DIR", meaning: "also mount the Agent Skills of DIR (default SKILLS_DIR)" }
    ]
  },
  {
    name: "mcp",
    args: "[module]",
    summary: "serve the catalog as an MCP server for any MCP client: stdio by default (docs/mcp-gateway.md)",
    options: [
      { flag: "--mcp FILE", meaning: "also mount the MCP servers of FILE (default MCP_CONFIG)" },
      { flag: "--skills DIR", meaning: "also mount the Agent Skills of DIR (default SKILLS_DIR)" },
      {
        flag: "--thread ID",
        meaning:
          "stdio: keep loads under thread ID (<data>/loaded-plugins.sqlite), shared by every process naming it; default: the session's own, in memory"
      },
      {
        flag: "--http PORT",
        meaning: "serve Streamable HTTP at http://HOST:PORT/mcp instead (0 = any free port)"
      },
      {
        flag: "--host H",
        meaning: "with --http: listen on H (default 127.0.0.1). Any non-loopback address needs a bearer token"
      },
      {
        flag: "--token-file FILE",
        meaning:
          "with --http: the bearer token (32+ characters) every request must carry as Authorization: Bearer <token>; or set PLUGBOARD_MCP_TOKEN"
      },
      {
        flag: "--grant A,B",
        meaning: "the abilities the gateway's user holds, for plugins that require them"
      },
      {
        flag: "--open",
        meaning:
          "open each OAuth connect link in the browser (xdg-open, macOS open); default: print it to stderr (docs/oauth.md#in-the-gateway)"
      },
      {
        flag: "--callback-port P",
        meaning:
          "stdio: the loopback port of the OAuth callback, http://127.0.0.1:P/oauth/callback (default: any free port)"
      }
    ]
  },
  {
    name: "chat",
    args: '"<message>"',
    summary: "stream one turn from a running oracle, as the local user",
    options: [
      { flag: "--url URL", meaning: "the oracle (default http://127.0.0.1:PORT)" },
      { flag: "--session ID", meaning: "continue this session (default: a new one)" }
    ]
  },
  {
    name: "console",
    args: "",
    summary: "open a running oracle's dev console with a fresh token",
    options: [
      { flag: "--url URL", meaning: "the oracle (default http://127.0.0.1:PORT)" },
      { flag: "--ttl SECONDS", meaning: "the token's lifetime, 1 to 900 (default 900)" },
      { flag: "--print", meaning: "print the link instead of opening a browser" }
    ]
  },
  {
    name: "token",
    args: "",
    summary: "print a UCAN invocation of the local user for the local oracle",
    options: [
      { flag: "--ttl SECONDS", meaning: "its lifetime, 1 to 900 (default 300)" },
      { flag: "--audience DID", meaning: "the oracle it is for (default: the local oracle's DID)" },
      {
        flag: "--grant A,B",
        meaning: "also carry these abilities on the oracle's resource, granted by the local oracle's key"
      }
    ]
  },
  {
    name: "credits",
    args: "[balance | top-up <amount>]",
    summary: "read or top up a user's credits (default: balance)",
    options: [{ flag: "--did DID", meaning: "the user (default: the local user)" }]
  },
  {
    name: "inspect",
    args: "[module] [options]",
    summary: "report a catalog offline: manifests, token costs, routing (plugboard inspect --help)",
    options: []
  },
  {
    name: "scripted-model",
    args: "[module]",
    summary:
      "serve the offline scripted model as an OpenAI-compatible endpoint (router over the module's catalog)",
    readsEnvironment: false,
    options: [
      { flag: "--port N", meaning: "listen on 127.0.0.1:N (default 3100; 0 = any free port)" },
      { flag: "--no-catalog", meaning: "route from the tools each request offers, with no catalog" },
      { flag: "--script FILE", meaning: "replay the JSON array of steps in FILE instead of routing" }
    ]
  }
]

const HELP = { flag: "-h, --help", meaning: "this text" }

/** Whether the arguments ask for help (`-h` or `--help` anywhere). */
export const asksForHelp = (argv: ReadonlyArray<string>): boolean =>
  argv.includes("--help") || argv.includes("-h")

const column = (rows: ReadonlyArray<readonly [string, string]>, indent: string): Array<string> => {
  const width = Math.max(...rows.map(([left]) => left.length))
  return rows.map(([left, right]) => `${indent}${left.padEnd(width)}  ${right}`)
}

/** `plugboard <command> --help`: the usage line, what it does, and its options. */
export const commandHelp = (name: string): string => {
  const command = COMMANDS.find((c) => c.name === name)
  if (command === undefined) throw new Error(`no help for '${name}'`)
  const options = [...command.options, HELP].map((o) => [o.flag, o.meaning] as const)
  return [
    `Usage: plugboard ${command.name}${command.args === "" ? "" : ` ${command.args}`} [options]`,
    "",
    `${command.summary[0]!.toUpperCase()}${command.summary.slice(1)}.`,
    "",
    "Options:",
    ...column(options, "  "),
    "",
    ...(command.readsEnvironment === false
      ? []
      : ["Configuration comes from the environment: plugboard help lists every variable.", ""])
  ].join("\n")
}

/** The command list of `plugboard help`, one aligned line per command. */
export const commandList = (): string =>
  [
    "Usage: plugboard <command> [options]     (plugboard <command> --help for its options)",
    "",
    ...column(
      COMMANDS.map((c) => [`${c.name}${c.args === "" ? "" : ` ${c.args}`}`, c.summary] as const),
      "  "
    ),
    ""
  ].join("\n")
