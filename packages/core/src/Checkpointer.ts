/**
 * The `Checkpointer` port: which saver holds a user's threads (docs/spec/graph-state.md#checkpointing).
 * Core resolves per user only; the saver itself (LangGraph's `BaseCheckpointSaver` on per-user
 * SQLite, Postgres, ...) is an opaque type the adapters choose, so core stays free of LangGraph.
 *
 * Hosts override the resolution for some users with `hooks.checkpointerForUser(did)`
 * (docs/spec/graph-state.md#checkpointing):
 * `withOverride` applies that hook in front of the default.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { isDid } from "./Auth.js"
import { describe } from "./Describe.js"

/** Why no saver could be had for a user. The pipeline logs it and runs the turn on empty state. */
export const CheckpointerErrorReason = Schema.Literal(
  "invalid-did",
  "unavailable",
  "corrupt",
  "override-failed"
)
/** Why no saver could be had for a user. */
export type CheckpointerErrorReason = typeof CheckpointerErrorReason.Type

/** No saver could be had for a user. */
export class CheckpointerError extends Schema.TaggedError<CheckpointerError>()("CheckpointerError", {
  reason: CheckpointerErrorReason,
  message: Schema.String
}) {}

/** The operations of the Checkpointer port, over the adapter's saver type. */
export interface CheckpointerService<Saver = unknown> {
  /** The saver of `did`'s threads. Calls for one user yield savers over the same state. */
  readonly forUser: (did: string) => Effect.Effect<Saver, CheckpointerError>
}

/** The Checkpointer port. Its saver type is opaque here; use `typed<Saver>()` to read it typed. */
export class Checkpointer extends Context.Tag("@plugboard/core/Checkpointer")<
  Checkpointer,
  CheckpointerService
>() {}

/**
 * The same tag, typed with the adapter's saver. One key, so a layer built through it satisfies
 * requirements on `Checkpointer` and vice versa.
 */
export const typed = <Saver>(): Context.Tag<Checkpointer, CheckpointerService<Saver>> =>
  Checkpointer as unknown as Context.Tag<Checkpointer, CheckpointerService<Saver>>

/**
 * The host hook of docs/spec/graph-state.md#checkpointing: a saver for this user, or nothing to use the default. May be async.
 * Passed by the host as `createOracleApp({ hooks: { checkpointerForUser } })`.
 */
export type CheckpointerForUser<Saver> = (
  did: string
) => Saver | undefined | null | Promise<Saver | undefined | null>

/** Validates a DID argument. */
export const checkDid = (did: unknown): Effect.Effect<string, CheckpointerError> =>
  isDid(did)
    ? Effect.succeed(did)
    : Effect.fail(
        new CheckpointerError({ reason: "invalid-did", message: "Checkpointer expects a user DID." })
      )

/**
 * Puts the host's hook in front of `base`: the hook's saver when it returns one, `base`'s
 * otherwise. A hook that throws or rejects fails `override-failed` — never a silent fallback to
 * the default, which would write the user's threads somewhere the host did not choose.
 */
export const withOverride = <Saver>(
  base: CheckpointerService<Saver>,
  hook: CheckpointerForUser<Saver>
): CheckpointerService<Saver> => ({
  forUser: (did) =>
    Effect.flatMap(checkDid(did), (d) =>
      Effect.flatMap(
        Effect.tryPromise({
          try: async () => hook(d),
          catch: (error) =>
            new CheckpointerError({
              reason: "override-failed",
              message: `checkpointerForUser(${d}) failed: ${describe(error)}`
            })
        }),
        (saver) => (saver === undefined || saver === null ? base.forUser(d) : Effect.succeed(saver))
      )
    )
})

/**
 * A per-process checkpointer for tests and the embedded default: `create(did)` builds a user's
 * saver once (e.g. LangGraph's `MemorySaver`); later calls return the same one.
 */
export const makeMemory = <Saver>(
  create: (did: string) => Saver
): Effect.Effect<CheckpointerService<Saver>> =>
  Effect.sync(() => {
    const savers = new Map<string, Saver>()
    return {
      forUser: (did) =>
        Effect.flatMap(checkDid(did), (d) =>
          Effect.try({
            try: () => {
              let saver = savers.get(d)
              if (saver === undefined) {
                saver = create(d)
                savers.set(d, saver)
              }
              return saver
            },
            catch: (error) =>
              new CheckpointerError({
                reason: "unavailable",
                message: `Could not create the saver of ${d}: ${describe(error)}`
              })
          })
        )
    }
  })

/** `makeMemory` as a layer of the (untyped) port. */
export const layerMemory = <Saver>(create: (did: string) => Saver): Layer.Layer<Checkpointer> =>
  Layer.effect(typed<Saver>(), makeMemory(create))
