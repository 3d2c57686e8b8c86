/** The in-memory ConnectionStore against the port's conformance suite, and the vault's sealing rule over it. */
import { ConnectionStore, TokenVault } from "@plugboard/core"
import { ConnectionStoreConformance } from "@plugboard/testing"
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"

ConnectionStoreConformance.run("memory", () => ConnectionStore.layerMemory)

// A cipher that only tags its text with key and context, enough to see the vault's rule (which
// context it seals under, what it does with a record that does not open). No real cipher is
// shipped yet (docs/oauth.md#not-built-yet).
const tagCipher = (key: string): TokenVault.Cipher => ({
  seal: (plain, context) => JSON.stringify([key, context, plain]),
  open: (sealed, context) => {
    const [k, c, plain] = JSON.parse(sealed) as [string, string, string]
    return k === key && c === context ? plain : undefined
  }
})

const ALICE = "did:key:alice"
const BOB = "did:key:bob"

describe("TokenVault over a ConnectionStore", () => {
  it("seals a secret under its user and server, and opens it back", async () => {
    const store = ConnectionStore.makeMemory()
    const vault = TokenVault.make(store, tagCipher("k1"))
    await Effect.runPromise(vault.put(ALICE, "github", { access_token: "at-1" }, 5))
    const raw = await Effect.runPromise(store.get(ALICE, "github"))
    expect(JSON.parse(raw!.sealed)[1]).toBe(TokenVault.sealContext(ALICE, "github"))
    expect(await Effect.runPromise(vault.get(ALICE, "github"))).toEqual({ access_token: "at-1" })
    expect(await Effect.runPromise(vault.list(ALICE))).toEqual([{ server: "github", updatedAtMs: 5 }])
  })

  it("a record moved to another user's slot, or read with another key, is 'sealed', not used", async () => {
    const store = ConnectionStore.makeMemory()
    const vault = TokenVault.make(store, tagCipher("k1"))
    await Effect.runPromise(vault.put(ALICE, "github", { access_token: "at-alice" }, 1))
    const raw = await Effect.runPromise(store.get(ALICE, "github"))
    await Effect.runPromise(store.put(BOB, "github", raw!.sealed, 1))
    const moved = await Effect.runPromiseExit(vault.get(BOB, "github"))
    expect(Exit.isFailure(moved) && moved.cause._tag === "Fail" && moved.cause.error.reason).toBe("sealed")
    const otherKey = await Effect.runPromiseExit(TokenVault.make(store, tagCipher("k2")).get(ALICE, "github"))
    expect(
      Exit.isFailure(otherKey) && otherKey.cause._tag === "Fail" && otherKey.cause.error.message
    ).toContain("does not open with this key")
  })

  it("refuses a secret that is not a JSON object, and a bad server name, as invalid", async () => {
    const vault = TokenVault.make(ConnectionStore.makeMemory(), tagCipher("k1"))
    for (const [server, secret] of [
      ["github", "text"],
      ["github", [1]],
      ["Not A Name", {}]
    ] as const) {
      const exit = await Effect.runPromiseExit(vault.put(ALICE, server, secret as never, 1))
      expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.reason).toBe("invalid")
    }
  })
})
