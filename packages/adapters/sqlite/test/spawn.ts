/**
 * Spawns `writer-child.ts` and parses its output. Node runs the child itself, with tsx as an
 * import hook: the `tsx` binary would be a wrapper process, and a SIGKILL sent to the wrapper
 * leaves the real writer running as an orphan — the kill would never hit the writes.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { join } from "node:path"

const here = import.meta.dirname
const root = join(here, "../../../..")

/** Spawns the writer child; collects its `ack` lines as they arrive. */
export const spawnWriter = (args: Array<string>) => {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--conditions=@plugboard/source", "--import", "tsx", join(here, "writer-child.ts"), ...args],
    { stdio: ["ignore", "pipe", "pipe"], cwd: root }
  )
  const acks: Array<{ id: string; value: string }> = []
  const errors: Array<string> = []
  const stats: Array<number> = []
  let ready = false
  let buffer = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8")
    let nl = buffer.indexOf("\n")
    while (nl >= 0) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      const [kind, id, value] = line.split(" ")
      if (kind === "ack") acks.push({ id: id!, value: value! })
      else if (kind === "stat") stats.push(Number(id))
      else if (kind === "ready") ready = true
      else errors.push(line)
      nl = buffer.indexOf("\n")
    }
  })
  child.stderr!.on("data", (chunk: Buffer) => errors.push(chunk.toString("utf8")))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal }))
  )
  return { child, acks, errors, stats, exited, isReady: () => ready }
}
