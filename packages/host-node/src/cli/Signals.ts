/**
 * How a long-running command (`serve`, `mcp`, `scripted-model`) learns it should stop: the first
 * SIGINT (Ctrl-C) or SIGTERM (a supervisor, `npm run` passing it on). The listeners go as soon as
 * one fires, so a second signal gets Node's default (an immediate exit) during a slow shutdown.
 */

/** Resolves with the name of the first SIGINT or SIGTERM the process receives. */
export const signalled = (): Promise<string> =>
  new Promise((resolve) => {
    const on = (signal: string) => () => {
      process.off("SIGINT", onInt)
      process.off("SIGTERM", onTerm)
      resolve(signal)
    }
    const onInt = on("SIGINT")
    const onTerm = on("SIGTERM")
    process.on("SIGINT", onInt)
    process.on("SIGTERM", onTerm)
  })
