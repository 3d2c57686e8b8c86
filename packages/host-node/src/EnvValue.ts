/**
 * An environment variable's value as every reader of the host takes it: trimmed, and `undefined`
 * when the variable is unset or blank, so `FOO=` in a `.env` file means "not set", as in
 * `Config.ts`'s reader (docs/configuration.md).
 */
export const envValue = (value: string | undefined): string | undefined => {
  const v = value?.trim()
  return v === undefined || v === "" ? undefined : v
}
