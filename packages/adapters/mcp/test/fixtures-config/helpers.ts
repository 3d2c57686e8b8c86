/** Shared by the config-side MCP tests: temp dirs, a scripted pool, and the fixture servers. */
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import type { RuntimeLogger, ToolOutput } from "@plugboard/core"
import * as Config from "../../src/Config.js"
import type {
  McpDescription,
  McpRequestOptions,
  McpServerConfig,
  McpToolDescription
} from "../../src/Types.js"

export const fixtures = import.meta.dirname
/** The MCP adapter package's folder, where its dev dependencies (the real servers) are installed. */
export const packageDir = resolve(import.meta.dirname, "../..")
export const everythingBin = join(
  packageDir,
  "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)

/** A fresh temp directory and its cleanup. */
export const tempDir = async (): Promise<{ dir: string; cleanup: () => Promise<void> }> => {
  const dir = await mkdtemp(join(tmpdir(), "plugboard-mcp-"))
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) }
}

/** Servers from a config value; fails the test on any config error. */
export const serversOf = (mcpServers: Record<string, unknown>): ReadonlyArray<McpServerConfig> => {
  const { servers, errors } = Config.parse({ mcpServers })
  if (errors.length > 0) throw new Error(errors.join("\n"))
  return servers
}

export const serverOf = (name: string, server: Record<string, unknown>): McpServerConfig =>
  serversOf({ [name]: server })[0]!

/** A logger that keeps what it is told. */
export const recordingLogger = (): RuntimeLogger & {
  readonly lines: Array<{ level: string; message: string }>
} => {
  const lines: Array<{ level: string; message: string }> = []
  const at = (level: string) => (message: string) => {
    lines.push({ level, message })
  }
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }
}

export const description = (name: string, tools: ReadonlyArray<string> = ["echo"]): McpDescription => ({
  serverInfo: { name, version: "1.0.0" },
  instructions: `The ${name} server. Use it to test things.`,
  tools: tools.map((t) => ({
    name: t,
    description: `The ${t} tool.`,
    inputSchema: { type: "object", properties: { message: { type: "string" } } }
  }))
})

export interface ScriptedCall {
  readonly server: string
  readonly tool: string
  readonly args: Readonly<Record<string, unknown>>
  readonly options: McpRequestOptions | undefined
}

/**
 * A pool with the real one's method signatures, answering from a script: `describe` waits
 * `delayMs` (or forever for `hang`) and fails with `fail`; `call` echoes its arguments.
 */
export const scriptedPool = (script: {
  readonly describe?: (server: McpServerConfig) => {
    delayMs?: number
    hang?: boolean
    fail?: Error
    tools?: string[]
  }
  readonly currentTools?: (server: string) => ReadonlyArray<McpToolDescription> | undefined
}) => {
  let active = 0
  let maxActive = 0
  const described: string[] = []
  const calls: ScriptedCall[] = []
  return {
    described,
    calls,
    get maxActive() {
      return maxActive
    },
    describe: async (server: McpServerConfig, options?: McpRequestOptions): Promise<McpDescription> => {
      described.push(server.name)
      active++
      maxActive = Math.max(maxActive, active)
      try {
        const plan = script.describe?.(server) ?? {}
        await new Promise<void>((done, failed) => {
          if (plan.hang !== true) setTimeout(done, plan.delayMs ?? 0)
          options?.signal?.addEventListener("abort", () => failed(options.signal?.reason))
        })
        if (plan.fail !== undefined) throw plan.fail
        return description(server.name, plan.tools)
      } finally {
        active--
      }
    },
    call: async (
      server: McpServerConfig,
      tool: string,
      args: Readonly<Record<string, unknown>>,
      options?: McpRequestOptions
    ): Promise<ToolOutput.ToolOutput> => {
      calls.push({ server: server.name, tool, args, options })
      return { _tag: "ToolOutput", content: [{ type: "text", text: JSON.stringify(args) }], isError: false }
    },
    currentTools: (server: string) => script.currentTools?.(server)
  }
}
