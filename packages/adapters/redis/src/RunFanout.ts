/**
 * Run fan-out over Redis pub/sub ("a rejoin on host B follows, live, a run that is
 * executing on host A"): the host appending a run's frames announces "run R has frames up to N",
 * and every host with a follower of R wakes it. The subscription has the shape core's
 * `RunStore.followLog` takes (`subscribe`), so a RunStore on any shared storage can plug it in.
 *
 * A wake-up only makes a follower re-read the store, which stays the source of truth, so a lost
 * message (Redis restarting) delays a follower but never skips or repeats a frame; pair it with
 * `followLog`'s `pollMs` to bound that delay. One subscriber connection per process; a run's
 * channel is subscribed while it has a follower here.
 */
import { createHash } from "node:crypto"
import { RunStore } from "@plugboard/core"
import { Context, Effect, Layer, type Scope } from "effect"
import type { Redis } from "ioredis"
import { RedisConnection, type RedisConnectionService } from "./RedisConnection.js"

/** Announces and follows runs' new frames across processes (core's `RunStore.FrameFanout`). */
export interface RunFanoutService extends RunStore.FrameFanout {
  /**
   * Announces that the run has frames up to `lastFrameId` (call it after the append or end
   * committed). Followers in this process are woken at once; a failure to reach Redis is
   * swallowed, since followers elsewhere still poll.
   */
  readonly publish: (did: string, runId: string, lastFrameId: number) => Effect.Effect<void>
  /**
   * Registers for the run's announcements for the life of the scope; completes once Redis has
   * confirmed the subscription (or could not be reached), so a frame announced afterwards wakes
   * it. Pass it as `followLog`'s `subscribe`.
   */
  readonly subscribe: (
    did: string,
    runId: string
  ) => Effect.Effect<RunStore.FrameSubscription, never, Scope.Scope>
}

/** The run fan-out service. */
export class RunFanout extends Context.Tag("@plugboard/redis/RunFanout")<RunFanout, RunFanoutService>() {}

/** Builds the fan-out on a connection; its subscriber connection closes with the scope. */
export const makeRunFanout = (
  redis: RedisConnectionService
): Effect.Effect<RunFanoutService, never, Scope.Scope> =>
  Effect.gen(function* () {
    const notifier = RunStore.makeNotifier()
    // A channel names the run by digests: DIDs and run ids are long and may hold any character.
    const channelOf = (did: string, runId: string) =>
      `${redis.prefix}run:${createHash("sha256")
        .update(JSON.stringify([did, runId]))
        .digest("hex")}`
    const runs = new Map<string, { did: string; runId: string; followers: number }>()
    const subscriber: Redis = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const client = redis.duplicate()
        client.on("message", (channel: string, message: string) => {
          const run = runs.get(channel)
          const id = Number(message)
          if (run !== undefined && Number.isSafeInteger(id)) notifier.publish(run.did, run.runId, id)
        })
        client.connect().catch(() => undefined)
        return client
      }),
      (client) => Effect.sync(() => client.disconnect())
    )

    const subscribe = (did: string, runId: string) =>
      Effect.gen(function* () {
        const channel = channelOf(did, runId)
        yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const run = runs.get(channel)
            if (run !== undefined) {
              run.followers++
              return
            }
            runs.set(channel, { did, runId, followers: 1 })
            await subscriber.subscribe(channel).catch(() => undefined)
          }),
          () =>
            Effect.promise(async () => {
              const run = runs.get(channel)
              if (run === undefined || --run.followers > 0) return
              runs.delete(channel)
              await subscriber.unsubscribe(channel).catch(() => undefined)
            })
        )
        return yield* notifier.subscribe(did, runId)
      })

    return {
      publish: (did, runId, lastFrameId) =>
        Effect.suspend(() => {
          notifier.publish(did, runId, lastFrameId)
          return Effect.ignore(
            redis.run("publish", (client) => client.publish(channelOf(did, runId), String(lastFrameId)))
          )
        }),
      subscribe
    }
  })

/** The run fan-out on the `RedisConnection`. */
export const layerRunFanout: Layer.Layer<RunFanout, never, RedisConnection> = Layer.scoped(
  RunFanout,
  Effect.flatMap(RedisConnection, makeRunFanout)
)
