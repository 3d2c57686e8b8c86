/**
 * One user's record for one server as the connections read and write it: decoded, with its
 * version (the sealed text, `TokenVault.read`), and written back only over the version it was
 * computed from (`TokenVault.putIf`, a compare-and-set on the store). Two hosts serving the same
 * user (Postgres, docs/oauth.md#several-hosts) then never lose one's write unseen: a write that
 * did not apply is a `Conflict`, and the writer reads again and decides again.
 */
import type { TokenVault } from "@plugboard/core"
import { Data, Effect, Either } from "effect"
import { OAuthError } from "./OAuthError.js"
import * as Secret from "./Secret.js"

/** A record as read: its version (undefined: none stored), and the record or why it is not usable. */
export interface Loaded {
  readonly version: string | undefined
  readonly record: Secret.Secret | undefined
  /** A stored record that does not open or has another shape (`needs-connect`). */
  readonly problem?: OAuthError | undefined
}

/** A conditional write that did not apply: another writer came first. */
export class Conflict extends Data.TaggedError("Conflict") {}

/** How many times a writer reads again after a conflict before giving up (`unavailable`). */
const ATTEMPTS = 8

const tooBusy = (server: string) =>
  new OAuthError({
    reason: "unavailable",
    server,
    message: `the connection to '${server}' kept changing under this host (other hosts writing it); try again`
  })

/** Runs `effect` again while it ends in a `Conflict`, a bounded number of times. */
export const retrying = <A>(
  server: string,
  effect: Effect.Effect<A, OAuthError | Conflict>
): Effect.Effect<A, OAuthError> => {
  const attempt = (left: number): Effect.Effect<A, OAuthError> =>
    Effect.catchIf(
      effect,
      (e): e is Conflict => e instanceof Conflict,
      () => (left > 1 ? attempt(left - 1) : Effect.fail(tooBusy(server)))
    ) as Effect.Effect<A, OAuthError>
  return attempt(ATTEMPTS)
}

/** The record operations over a vault. */
export interface Records {
  readonly read: (user: string, server: string) => Effect.Effect<Loaded, OAuthError>
  /** Writes `secret` over `version`: the new version, or a `Conflict`. */
  readonly writeIf: (
    user: string,
    server: string,
    version: string | undefined,
    secret: Secret.Secret
  ) => Effect.Effect<string, OAuthError | Conflict>
  /** Forgets the record if it is still `version`, else a `Conflict`. */
  readonly removeIf: (
    user: string,
    server: string,
    version: string
  ) => Effect.Effect<void, OAuthError | Conflict>
  /**
   * Writes `next(latest)` over the record first read as `from`, reading again after each
   * conflict; `next` returning undefined writes nothing. The record it decided on.
   */
  readonly update: (
    user: string,
    server: string,
    from: Loaded,
    next: (latest: Secret.Secret | undefined) => Secret.Secret | undefined
  ) => Effect.Effect<Secret.Secret | undefined, OAuthError>
}

/** Options of {@link make}. */
export interface RecordsOptions {
  readonly vault: TokenVault.TokenVaultService
  readonly now: () => number
  readonly fromVault: (server: string) => (error: TokenVault.TokenVaultError) => OAuthError
  readonly needsConnect: (server: string, why: string, cause?: unknown) => OAuthError
}

/** The record operations. */
export const make = (options: RecordsOptions): Records => {
  const { vault, now, fromVault, needsConnect } = options

  const read: Records["read"] = (user, server) =>
    Effect.map(Effect.mapError(vault.read(user, server), fromVault(server)), (found): Loaded => {
      if (found === undefined) return { version: undefined, record: undefined }
      if (found.problem !== undefined) {
        return { version: found.version, record: undefined, problem: fromVault(server)(found.problem) }
      }
      const decoded = Secret.read(found.secret)
      return Either.isRight(decoded)
        ? { version: found.version, record: decoded.right }
        : {
            version: found.version,
            record: undefined,
            problem: needsConnect(server, `the stored connection has an unknown format (${decoded.left})`)
          }
    })

  const writeIf: Records["writeIf"] = (user, server, version, secret) =>
    Effect.flatMap(
      Effect.mapError(vault.putIf(user, server, version, secret, now()), fromVault(server)),
      (written) => (written === undefined ? Effect.fail(new Conflict()) : Effect.succeed(written))
    )

  const removeIf: Records["removeIf"] = (user, server, version) =>
    Effect.flatMap(Effect.mapError(vault.removeIf(user, server, version), fromVault(server)), (applied) =>
      applied ? Effect.void : Effect.fail(new Conflict())
    )

  const update: Records["update"] = (user, server, from, next) => {
    let latest = from
    return retrying(
      server,
      Effect.gen(function* () {
        const record = next(latest.record)
        if (record === undefined) return latest.record
        const written = yield* Effect.either(writeIf(user, server, latest.version, record))
        if (Either.isRight(written)) return record
        latest = yield* read(user, server)
        return yield* written.left
      })
    )
  }

  return { read, writeIf, removeIf, update }
}
