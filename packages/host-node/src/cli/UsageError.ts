/**
 * A command line a command cannot run: an unknown option, a missing or malformed value. One class
 * for every command (`serve`, `token`, `credits`, `chat`, `console`, `inspect`), so each tag
 * means one thing; the CLI prints its message with a pointer to the command's `--help`.
 */
import { Data } from "effect"

/**
 * A command line that cannot be used. Thrown to the CLI's plain code: a `Data.TaggedError` is a
 * real `Error` whose `name` is its tag, so its message and stack read as a plain error's.
 */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {
  constructor(message: string) {
    super({ message })
  }
}
