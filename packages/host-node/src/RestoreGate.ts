/**
 * Before a user's request is served, their state is picked up from Matrix (the sync engine's
 * `restore`) — but a homeserver must never hold a turn hostage. The gate:
 *
 * - shares one restore call among a user's concurrent requests;
 * - lets a request wait for it at most `boundMs`; past that the request is served from the local
 *   state (the error is logged) and the restore carries on in the background;
 * - after a restore that failed or overran the bound, does not make that user's requests wait
 *   on Matrix again for `backoffMs` (the engine keeps retrying in the background, and brings the
 *   room's snapshot in when the homeserver is back; its rule moves unsynced local state aside).
 *
 * How often the homeserver is actually asked is the engine's business (`recheckAfterMs`: a user
 * whose restore resolved recently and whose database is on disk costs no round trip).
 */

import type { RuntimeLogger } from "@plugboard/core"
import { describe } from "@plugboard/core"
import type { RestoreOutcome } from "@plugboard/matrix"

/** Options of `makeRestoreGate`. Times in milliseconds. */
export interface RestoreGateOptions {
  readonly restore: (did: string) => Promise<RestoreOutcome>
  /** Longest a request waits for a restore. */
  readonly boundMs: number
  /** After a failed or overrun restore, how long that user's requests skip the wait. */
  readonly backoffMs: number
  readonly logger: RuntimeLogger
  readonly now?: () => number
}

interface InFlight {
  readonly done: Promise<void>
  overran: boolean
}

/** Builds the gate; the returned function resolves when the request may be served (never rejects). */
export const makeRestoreGate = (options: RestoreGateOptions): ((did: string) => Promise<void>) => {
  const now = options.now ?? Date.now
  const inFlight = new Map<string, InFlight>()
  const skipUntil = new Map<string, number>()
  const backOff = (did: string) => {
    if (options.backoffMs > 0) skipUntil.set(did, now() + options.backoffMs)
  }

  const start = (did: string): InFlight => {
    const run: InFlight = {
      overran: false,
      done: options
        .restore(did)
        .then(
          (outcome) => {
            if (outcome._tag !== "Unavailable" && outcome._tag !== "Rejected") {
              skipUntil.delete(did) // resolved after all: back to the normal path
              return
            }
            backOff(did)
            const fields = { did, error: outcome.message }
            if (outcome._tag === "Rejected") {
              options.logger.error(
                "matrix restore refused the room's snapshot; serving the local state",
                fields
              )
            } else {
              options.logger.warn("matrix restore failed; serving the local state", fields)
            }
          },
          (error: unknown) => {
            backOff(did)
            options.logger.error("matrix restore failed; serving the local state", {
              did,
              error: describe(error)
            })
          }
        )
        .finally(() => {
          if (inFlight.get(did) === run) inFlight.delete(did)
        })
    }
    inFlight.set(did, run)
    return run
  }

  return async (did) => {
    const until = skipUntil.get(did)
    if (until !== undefined) {
      if (now() < until) return
      skipUntil.delete(did)
    }
    const running = inFlight.get(did)
    // A restore already past the bound: this request does not wait on it at all.
    if (running?.overran === true) return
    const run = running ?? start(did)
    let timer: ReturnType<typeof setTimeout> | undefined
    const overran = await Promise.race([
      run.done.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), options.boundMs)
      })
    ])
    clearTimeout(timer)
    if (overran && !run.overran) {
      run.overran = true
      backOff(did)
      options.logger.error(
        `matrix restore did not finish within ${options.boundMs} ms; serving the local state, the restore goes on in the background`,
        { did }
      )
    }
  }
}
