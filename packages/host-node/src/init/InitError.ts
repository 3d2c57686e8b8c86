/**
 * Why `plugboard init` wrote nothing: its own module so that `Init.ts` (the scaffold) and
 * `Vendor.ts` (the tarballs it installs from) both raise it.
 */
import { Data } from "effect"

/** The project cannot be scaffolded; `message` says why and what to do. Nothing was written. */
export class InitError extends Data.TaggedError("InitError")<{
  readonly reason: "not-empty" | "not-a-directory" | "usage" | "no-tarballs" | "pack-failed"
  readonly message: string
}> {
  // Thrown to the CLI's plain code: a `Data.TaggedError` is a real `Error` whose `name` is its tag,
  // so plain callers see the same name, message and stack as before.
  constructor(reason: InitError["reason"], message: string) {
    super({ reason, message })
  }
}
