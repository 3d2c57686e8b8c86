/**
 * Shared state (`getSharedState`, docs/plugins.md#getsharedstate): read once at boot by the host, in
 * dependency order, and merged into `context.shared`, one namespace like tool names.
 */
import { Data, Effect, Either } from "effect"
import { describe } from "../../Describe.js"
import { shown } from "../text.js"
import type { Catalog } from "./model.js"

/** What one plugin's `getSharedState` gave, or how it failed. */
export type SharedStateRead =
  | { readonly plugin: string; readonly value: unknown }
  | { readonly plugin: string; readonly failure: unknown }

/** Shared state that cannot be assembled: every problem, each worded for a `[boot-error]` line. */
export class SharedStateError extends Data.TaggedError("SharedStateError")<{
  readonly reason: "invalid-shared-state"
  readonly errors: ReadonlyArray<string>
}> {
  /** One `[boot-error] <message>` line per problem. */
  get lines(): ReadonlyArray<string> {
    return this.errors.map((e) => `[boot-error] ${e}`)
  }
  override get message(): string {
    return this.errors.join("\n")
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value)

/**
 * Assembles `context.shared` from the values the plugins' `getSharedState` hooks gave (read
 * by the host in `withSharedState` order; the reading may do I/O, so it is the host's). Each
 * value must be an object; `shared` is one namespace, like tool names: a key belongs to the
 * plugin that registers it, and a key two plugins register is an error naming both, not a
 * silent overwrite. A failed read is an error naming the plugin. Every problem is reported.
 */
export const mergeSharedState = (
  reads: ReadonlyArray<SharedStateRead>
): Either.Either<Readonly<Record<string, unknown>>, SharedStateError> => {
  const shared: Record<string, unknown> = {}
  const owners = new Map<string, string>()
  const errors: string[] = []
  for (const read of reads) {
    const plugin = shown(String(read.plugin))
    if ("failure" in read) {
      errors.push(`Plugin '${plugin}' getSharedState failed: ${describe(read.failure)}`)
      continue
    }
    if (!isRecord(read.value)) {
      const got = read.value === null ? "null" : Array.isArray(read.value) ? "an array" : typeof read.value
      errors.push(`Plugin '${plugin}' getSharedState must return an object (got ${got}).`)
      continue
    }
    for (const [key, value] of Object.entries(read.value)) {
      const owner = owners.get(key)
      if (owner !== undefined) {
        errors.push(
          `Plugin '${plugin}' shared state key '${shown(key)}' is already registered by plugin '${owner}' (shared state is one namespace).`
        )
        continue
      }
      owners.set(key, plugin)
      // defineProperty, not assignment: a key such as `__proto__` stays a plain key.
      Object.defineProperty(shared, key, { value, enumerable: true, writable: true, configurable: true })
    }
  }
  return errors.length > 0
    ? Either.left(new SharedStateError({ reason: "invalid-shared-state", errors }))
    : Either.right(shared)
}

/**
 * Reads every plugin's `getSharedState` once, in `withSharedState` order (a plugin after those it
 * `dependsOn`), and merges the values by `mergeSharedState`'s rule; what a host does at boot, for
 * embedders too. `host` holds the host's own entries (a ledger, a client): their keys are taken,
 * so a plugin that registers one is an error as well, never a silent overwrite either way.
 */
export const readSharedState = (
  catalog: Catalog,
  host: Readonly<Record<string, unknown>> = {}
): Effect.Effect<Readonly<Record<string, unknown>>, SharedStateError> =>
  Effect.gen(function* () {
    const reads: Array<SharedStateRead> = []
    for (const entry of catalog.withSharedState) {
      reads.push(
        yield* Effect.tryPromise({
          try: async () => entry.plugin.getSharedState?.(),
          catch: (failure) => failure
        }).pipe(
          Effect.match({
            onSuccess: (value): SharedStateRead => ({ plugin: entry.name, value }),
            onFailure: (failure): SharedStateRead => ({ plugin: entry.name, failure })
          })
        )
      )
    }
    const taken: Array<string> = []
    for (const read of reads) {
      if ("failure" in read || !isRecord(read.value)) continue
      for (const key of Object.keys(read.value)) {
        if (Object.hasOwn(host, key)) {
          taken.push(
            `Plugin '${shown(read.plugin)}' shared state key '${shown(key)}' is reserved by the host.`
          )
        }
      }
    }
    const merged = mergeSharedState(reads)
    const errors = [...taken, ...(Either.isLeft(merged) ? merged.left.errors : [])]
    if (errors.length > 0 || Either.isLeft(merged)) {
      return yield* Effect.fail(new SharedStateError({ reason: "invalid-shared-state", errors }))
    }
    const shared: Record<string, unknown> = { ...merged.right }
    for (const [key, value] of Object.entries(host)) {
      Object.defineProperty(shared, key, { value, enumerable: true, writable: true, configurable: true })
    }
    return shared
  })
