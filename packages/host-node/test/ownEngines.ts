/**
 * A PostgreSQL cluster and a Redis server of a test file's own (scripts/services/*.sh on a folder
 * and a port of their own), so that a test may stop and restart them without disturbing any other
 * suite. Debian's binaries; `installed` says whether they are there.
 */
import { execFile } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { ROOT } from "./runCli.js"

const run = promisify(execFile)

/** Whether Debian's PostgreSQL and Redis are installed. */
export const installed = {
  postgres: existsSync("/usr/lib/postgresql") && readdirSync("/usr/lib/postgresql").length > 0,
  redis: ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].some((p) => existsSync(p))
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** One engine: its URL, and commands to stop, start and remove it. */
export interface OwnEngine {
  readonly url: string
  readonly stop: () => Promise<void>
  readonly start: () => Promise<void>
  readonly remove: () => Promise<void>
}

const engine = async (which: "postgres" | "redis"): Promise<OwnEngine> => {
  const base = mkdtempSync(join(tmpdir(), `plugboard-own-${which}-`))
  // A cluster belongs to `postgres` under root: its folder must be reachable.
  chmodSync(base, 0o755)
  const prefix = which === "postgres" ? "PLUGBOARD_POSTGRES" : "PLUGBOARD_REDIS"
  const env = {
    ...process.env,
    [`${prefix}_DIR`]: join(base, which),
    [`${prefix}_PORT`]: String(await freePort())
  }
  const script = join(ROOT, `scripts/services/${which}.sh`)
  const command = async (name: string) => (await run(script, [name], { env })).stdout
  await command("start")
  const variable = which === "postgres" ? "PLUGBOARD_TEST_POSTGRES_URL" : "PLUGBOARD_TEST_REDIS_URL"
  const url = new RegExp(`${variable}=(\\S+)`).exec(await command("env"))![1]!
  return {
    url,
    stop: async () => void (await command("stop")),
    start: async () => void (await command("start")),
    remove: async () => {
      await command("reset").catch(() => undefined)
      rmSync(base, { recursive: true, force: true })
    }
  }
}

/** A PostgreSQL cluster of the caller's own, started. */
export const ownPostgres = () => engine("postgres")

/** A Redis server of the caller's own, started. */
export const ownRedis = () => engine("redis")
