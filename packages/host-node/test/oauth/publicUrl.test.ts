/**
 * `PUBLIC_URL` (docs/oauth.md#in-the-host): the host's address as browsers reach it, whose
 * `/oauth/callback` is the OAuth redirect URI. Kept without a trailing slash; anything that is
 * not an absolute http(s) URL without query, fragment or credentials is a config error.
 */
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { fromEnv } from "../../src/Config.js"

const read = (value: string | undefined) =>
  Either.mapLeft(
    Either.map(Effect.runSync(Effect.either(fromEnv({ PUBLIC_URL: value }, "/srv"))), (c) => c.publicUrl),
    (e) => e.lines
  )

describe("PUBLIC_URL", () => {
  it("is absent by default (the listen address is used), and kept without a trailing slash", () => {
    expect(read(undefined)).toEqual(Either.right(undefined))
    expect(read("  ")).toEqual(Either.right(undefined))
    expect(read("https://oracle.example.com/")).toEqual(Either.right("https://oracle.example.com"))
    expect(read("https://Oracle.Example.com:8443/plugboard//")).toEqual(
      Either.right("https://oracle.example.com:8443/plugboard")
    )
  })

  it("refuses what is not an absolute http(s) URL without query, fragment or credentials", () => {
    expect(read("oracle.example.com")).toEqual(
      Either.left([
        '[config-error] PUBLIC_URL must be an absolute URL such as https://oracle.example.com, got "oracle.example.com".'
      ])
    )
    expect(read("ftp://oracle.example.com")).toEqual(
      Either.left(['[config-error] PUBLIC_URL must be an http or https URL, got "ftp:".'])
    )
    for (const bad of [
      "https://oracle.example.com/?a=1",
      "https://oracle.example.com/#x",
      "https://u:p@oracle.example.com"
    ])
      expect(read(bad)).toEqual(
        Either.left(["[config-error] PUBLIC_URL must have no query, fragment or credentials."])
      )
  })
})
