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

  it("read gives the version; putIf and removeIf apply only over it, and a stale writer is told", async () => {
    const store = ConnectionStore.makeMemory()
    const vault = TokenVault.make(store, tagCipher("k1"))
    const run = Effect.runPromise
    const v1 = await run(vault.putIf(ALICE, "github", undefined, { n: 1 }, 1))
    expect(v1).toBe((await run(store.get(ALICE, "github")))?.sealed)
    expect(await run(vault.putIf(ALICE, "github", undefined, { n: 9 }, 1))).toBeUndefined()
    const read = await run(vault.read(ALICE, "github"))
    expect(read).toEqual({ version: v1, secret: { n: 1 } })
    // Two writers read v1; the first one's write applies, the second's does not and changes nothing.
    const v2 = await run(vault.putIf(ALICE, "github", v1, { n: 2 }, 2))
    expect(v2).toBeDefined()
    expect(await run(vault.putIf(ALICE, "github", v1, { n: 3 }, 3))).toBeUndefined()
    expect(await run(vault.removeIf(ALICE, "github", v1!))).toBe(false)
    expect(await run(vault.get(ALICE, "github"))).toEqual({ n: 2 })
    expect(await run(vault.removeIf(ALICE, "github", v2!))).toBe(true)
    expect(await run(vault.get(ALICE, "github"))).toBeUndefined()
  })

  it("a record that does not open is read with its version and the 'sealed' problem, and can be replaced over it", async () => {
    const store = ConnectionStore.makeMemory()
    await Effect.runPromise(TokenVault.make(store, tagCipher("old")).put(ALICE, "github", { n: 1 }, 1))
    const vault = TokenVault.make(store, tagCipher("new"))
    const read = await Effect.runPromise(vault.read(ALICE, "github"))
    expect(read?.problem?.reason).toBe("sealed")
    expect(read?.version).toBe((await Effect.runPromise(store.get(ALICE, "github")))?.sealed)
    expect(await Effect.runPromise(vault.putIf(ALICE, "github", read!.version, { n: 2 }, 2))).toBeDefined()
    expect(await Effect.runPromise(vault.get(ALICE, "github"))).toEqual({ n: 2 })
  })

  it("a record sealed under a previous key is sealed again under the current one when read, by compare-and-set only", async () => {
    // A rotating cipher: seals with its first key, opens with any, stale when only a later one opens.
    const rotating = (keys: ReadonlyArray<string>): TokenVault.Cipher => {
      const [current] = keys
      const tagged = keys.map(tagCipher)
      return {
        seal: (plain, context) => tagCipher(current!).seal(plain, context),
        open: (sealed, context) => tagged.map((c) => c.open(sealed, context)).find((p) => p !== undefined),
        isStale: (sealed, context) =>
          tagged[0]!.open(sealed, context) === undefined &&
          tagged.slice(1).some((c) => c.open(sealed, context) !== undefined)
      }
    }
    const store = ConnectionStore.makeMemory()
    await Effect.runPromise(TokenVault.make(store, tagCipher("old")).put(ALICE, "github", { n: 1 }, 7))
    const read = await Effect.runPromise(
      TokenVault.make(store, rotating(["new", "old"])).read(ALICE, "github")
    )
    const stored = await Effect.runPromise(store.get(ALICE, "github"))
    expect(read).toEqual({ version: stored?.sealed, secret: { n: 1 } })
    expect(JSON.parse(stored!.sealed)[0]).toBe("new")
    expect(stored?.updatedAtMs).toBe(7)
    // Once the old key is gone, the resealed record still opens.
    expect(await Effect.runPromise(TokenVault.make(store, tagCipher("new")).get(ALICE, "github"))).toEqual({
      n: 1
    })

    // A writer that wrote between the read and the reseal wins: the reseal does not apply.
    const raced = ConnectionStore.makeMemory()
    await Effect.runPromise(TokenVault.make(raced, tagCipher("old")).put(ALICE, "github", { n: 1 }, 1))
    const newer = TokenVault.make(raced, tagCipher("new"))
    const racing: ConnectionStore.ConnectionStoreService = {
      ...raced,
      get: (user, server) =>
        Effect.tap(raced.get(user, server), () => newer.put(user, server, { n: 2 }, 2).pipe(Effect.orDie))
    }
    const seen = await Effect.runPromise(
      TokenVault.make(racing, rotating(["new", "old"])).read(ALICE, "github")
    )
    expect(seen?.secret).toEqual({ n: 1 })
    expect(JSON.parse(seen!.version)[0]).toBe("old")
    expect(await Effect.runPromise(newer.get(ALICE, "github"))).toEqual({ n: 2 })
  })
})
