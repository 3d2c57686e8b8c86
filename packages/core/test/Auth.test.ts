import { AuthConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Auth from "../src/Auth.js"

let n = 0
AuthConformance.run("test layer", () => ({
  auth: Auth.makeTest,
  issue: () =>
    Effect.sync(() => {
      const did = `did:key:z6MkUser${++n}`
      return { did, credentials: Auth.testCredentials(did) }
    }),
  refused: () =>
    Effect.succeed([
      { name: "not a test token", credentials: { authorization: "Bearer abc.def.ghi" }, reason: "malformed" },
      { name: "no DID", credentials: { authorization: "Bearer test:" }, reason: "malformed" },
      { name: "bad DID", credentials: { authorization: "Bearer test:alice" }, reason: "malformed" },
      { name: "wrong scheme", credentials: { authorization: "Basic test:did:key:z" }, reason: "malformed" },
      { name: "delegation header", credentials: { ucanDelegation: "nope" }, reason: "malformed" }
    ])
}))

const reasonOf = (exit: Exit.Exit<unknown, Auth.AuthError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : undefined

describe("Auth", () => {
  it("layerTest accepts `Bearer test:<did>` and the delegation header", async () => {
    const [a, b] = await Effect.gen(function* () {
      const auth = yield* Auth.Auth
      return [
        yield* auth.verify({ authorization: "bearer   test:did:web:example.com:user%20x" }),
        yield* auth.verify({ ucanDelegation: "test:did:key:z6MkB" })
      ]
    }).pipe(Effect.provide(Auth.layerTest), Effect.runPromise)
    expect(a).toEqual({ did: "did:web:example.com:user%20x" })
    expect(b).toEqual({ did: "did:key:z6MkB" })
  })

  it("parseBearer distinguishes missing from malformed", async () => {
    expect(await Effect.runPromise(Auth.parseBearer("Bearer abc"))).toBe("abc")
    expect(reasonOf(await Effect.runPromiseExit(Auth.parseBearer(undefined)))).toBe("missing")
    expect(reasonOf(await Effect.runPromiseExit(Auth.parseBearer("  ")))).toBe("missing")
    expect(reasonOf(await Effect.runPromiseExit(Auth.parseBearer("Bearer")))).toBe("malformed")
    expect(reasonOf(await Effect.runPromiseExit(Auth.parseBearer("Token abc")))).toBe("malformed")
  })

  it("isDid follows the DID Core syntax", () => {
    for (const ok of [
      "did:key:z6Mk",
      "did:web:example.com",
      "did:ixo:entity:abc-1",
      "did:x:a%2Fb",
      "did:x::a"
    ]) {
      expect(Auth.isDid(ok), ok).toBe(true)
    }
    for (const bad of [
      "",
      "did",
      "did:",
      "did:key",
      "did:key:",
      "did:KEY:x",
      "did:key:a:",
      "did:key:a b",
      "did:x:%zz",
      5
    ]) {
      expect(Auth.isDid(bad), String(bad)).toBe(false)
    }
    expect(Auth.isDid(`did:key:${"a".repeat(3000)}`)).toBe(false)
  })

  it("property: isDid never throws and accepts only the did: prefix", () =>
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const ok = Auth.isDid(value)
        if (ok) expect((value as string).startsWith("did:")).toBe(true)
      })
    ))
})
