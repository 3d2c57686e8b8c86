// A process that starts and never answers: it reads stdin and says nothing, so `initialize` hangs.
// With FIXTURE_PIDS set, it also starts a grandchild that ignores SIGTERM (as a server behind a
// wrapper such as `npx` may); once its handler is set, the grandchild writes both process ids to
// that file as JSON.
import { spawn } from "node:child_process"

process.stdin.resume()
setInterval(() => {}, 1 << 30)
if (process.env.FIXTURE_PIDS) {
  const grandchild = `
    process.on("SIGTERM", () => {})
    require("node:fs").writeFileSync(process.env.FIXTURE_PIDS, JSON.stringify({ pid: process.ppid, grandchild: process.pid }))
    setInterval(() => {}, 1 << 30)`
  spawn(process.execPath, ["-e", grandchild], { stdio: "ignore" })
}
