/**
 * The command line of the `plugboard` commands: options split from positional arguments, and
 * whole numbers checked. Its own light module so that a command that needs none of the server
 * stack (`scripted-model`) parses its arguments without importing it (`Commands.ts` does).
 */
import { Access } from "@plugboard/core"
import { UsageError } from "./UsageError.js"

/**
 * Splits `--flag value` / `--flag=value` options from positional arguments. `switches` are
 * options that take no value (`--no-catalog`), set to `"true"` when present. An unknown option, an
 * option without a value (or with an empty one) and an option given twice are `UsageError`s;
 * `unknownHint` may word an unknown option's error (a flag that was removed on purpose, say).
 */
export const parseFlags = (
  argv: ReadonlyArray<string>,
  known: ReadonlyArray<string>,
  switches: ReadonlyArray<string> = [],
  unknownHint: (name: string) => string | undefined = () => undefined
): { readonly positional: Array<string>; readonly flags: Record<string, string> } => {
  const positional: Array<string> = []
  const flags: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith("--")) {
      positional.push(arg)
      continue
    }
    const [name, inline] = arg.slice(2).split("=", 2) as [string, string | undefined]
    if (flags[name] !== undefined) throw new UsageError(`Option --${name} is given more than once.`)
    if (switches.includes(name)) {
      if (inline !== undefined) throw new UsageError(`Option --${name} takes no value.`)
      flags[name] = "true"
      continue
    }
    if (!known.includes(name)) throw new UsageError(unknownHint(name) ?? `Unknown option --${name}.`)
    const value = inline ?? argv[++i]
    if (value === undefined || value === "") throw new UsageError(`Option --${name} needs a value.`)
    flags[name] = value
  }
  return { positional, flags }
}

/** `raw` as a whole number from `min` to `max`, or a `UsageError` naming the option. */
export const wholeNumber = (name: string, raw: string, min: number, max: number): number => {
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}.`)
  }
  return n
}

/**
 * `--grant a/b,c/d`: abilities on `resource`, checked by core's rule (`Access.readRequires`). None
 * when the flag is absent; a malformed or empty one is a `UsageError`.
 */
export const grantsFlag = (value: string | undefined, resource: string): ReadonlyArray<Access.Capability> => {
  if (value === undefined) return []
  const problems: Array<string> = []
  const grants = Access.readRequires(
    value
      .split(",")
      .map((can) => can.trim())
      .filter((can) => can.length > 0)
      .map((can) => ({ can, with: resource })),
    "--grant",
    problems
  )
  if (problems.length > 0 || grants.length === 0) {
    throw new UsageError(problems[0] ?? "--grant needs abilities: --grant admin/read,ops/restart")
  }
  return grants
}
