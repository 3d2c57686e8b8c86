/**
 * How a long-running command (`serve`, `mcp`, `scripted-model`) learns it should stop: the first
 * SIGINT (Ctrl-C) or SIGTERM (a supervisor, `npm run` passing it on), or the death of the process
 * that started it. The signal listeners go as soon as one fires, so a second signal gets Node's
 * default (an immediate exit) during a slow shutdown.
 *
 * Why the parent is watched: a wrapper (`npm run serve`, `npx plugboard serve`, a shell script)
 * may die without passing its signal on (npm runs scripts through `sh -c`, and a shell killed by
 * SIGTERM does not forward it), which left the server listening with no parent (issue 36 item 17,
 * docs/cli.md). Linux has no portable "signal me when my parent dies" in Node, so the parent's pid
 * is read every `PARENT_POLL_MS`: when it changes the process was re-parented, its parent is gone.
 * A process started by pid 1 or with no parent (a container's entry point) has nothing to watch.
 * The parent is the one this module saw when it was first imported, at start-up: read when
 * `signalled` is called (after the banner), a wrapper killed during boot was never seen at all.
 */

/** The parent the process was started by, read once at start-up. */
const STARTED_BY = process.ppid

/** How often the parent's pid is read: a second is the longest a server outlives its wrapper. */
export const PARENT_POLL_MS = 1000

/** The reason `signalled` gives when the parent died. */
export const PARENT_EXITED = "parent process exited"

/**
 * Resolves with the name of the first SIGINT or SIGTERM the process receives, or `PARENT_EXITED`
 * when the process that started it exits (its `ppid` changes).
 */
export const signalled = (): Promise<string> =>
  new Promise((resolve) => {
    const stop = (reason: string) => {
      process.off("SIGINT", onInt)
      process.off("SIGTERM", onTerm)
      clearInterval(watch)
      resolve(reason)
    }
    const onInt = () => stop("SIGINT")
    const onTerm = () => stop("SIGTERM")
    process.on("SIGINT", onInt)
    process.on("SIGTERM", onTerm)
    const orphaned = () => STARTED_BY > 1 && process.ppid !== STARTED_BY
    const watch = setInterval(() => {
      if (orphaned()) stop(PARENT_EXITED)
    }, PARENT_POLL_MS)
    watch.unref()
    if (orphaned()) stop(PARENT_EXITED)
  })
