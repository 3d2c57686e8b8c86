/**
 * `describe(error)`: what a thrown or failed value says, in one sentence for a log line or a
 * message (an `Error`'s message, anything else as `String` gives it). One helper for the whole
 * codebase, so that every layer reports a failure the same way.
 */

/** What a thrown value says (an `Error`'s message, else `String(value)`), even when reading it throws too. */
export const describe = (thrown: unknown): string => {
  try {
    return thrown instanceof Error ? thrown.message : String(thrown)
  } catch {
    return "an unprintable value"
  }
}
