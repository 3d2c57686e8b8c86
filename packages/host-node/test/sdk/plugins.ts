/** Plugins the SDK tests' server runs (loaded in the server's process, see server.ts). */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"

/**
 * An always-visible plugin whose tool runs until its turn is aborted (or 30 s pass), then takes
 * `cleanupMs` to let go, as a job stopping its work does. The router calls it for "Run the slow
 * job". The cleanup keeps the turn's end well behind the answer to `POST /messages/abort`: the
 * SDK's `abortStream()` throws a TypeError when the turn settles while its abort request is still
 * in flight (dist/index.js:1625, after `settleStream` cleared the controller at :1683).
 */
export const slowJob = (cleanupMs: number): Plugin =>
  definePlugin({
    name: "slow-job",
    manifest: {
      title: "Slow job",
      summary: "Runs a slow background job.",
      whenToUse: ["When asked to run the slow job."],
      examples: [{ user: "Run the slow job", tool: "run_slow_job", args: {} }],
      tags: ["slow", "job"],
      visibility: "always"
    },
    tools: [
      defineTool({
        name: "run_slow_job",
        description: "Runs the slow job until it finishes.",
        input: Schema.Struct({}),
        handler: (_input, context) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => resolve("finished"), 30_000)
            context.signal.addEventListener("abort", () => {
              clearTimeout(timer)
              setTimeout(() => reject(new Error("the job was cancelled")), cleanupMs)
            })
          })
      })
    ]
  })
