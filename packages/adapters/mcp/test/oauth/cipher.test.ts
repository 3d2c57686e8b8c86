/**
 * The AES-256-GCM cipher of connection records: what it seals opens again under the same key and
 * context, and nothing else opens (another key, another context, a changed byte, a cut text,
 * another format); keys are read from hex or base64 and a bad key is refused without quoting it.
 */
import { randomBytes } from "node:crypto"
import { ConnectionStore, TokenVault } from "@plugboard/core"
import { Effect, Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Cipher from "../../src/oauth/Cipher.js"

const key = () => new Uint8Array(randomBytes(32))

describe("the AES-256-GCM cipher", () => {
  it("opens what it sealed, under the same context", () => {
    const cipher = Cipher.make(key())
    const sealed = cipher.seal('{"access_token":"at-123"}', '["did:key:alice","github"]')
    expect(sealed.startsWith(Cipher.SEALED_PREFIX)).toBe(true)
    expect(sealed).not.toContain("at-123")
    expect(cipher.open(sealed, '["did:key:alice","github"]')).toBe('{"access_token":"at-123"}')
  })

  it("seals the same text differently each time (a fresh IV), and both open", () => {
    const cipher = Cipher.make(key())
    const a = cipher.seal("same", "ctx")
    const b = cipher.seal("same", "ctx")
    expect(a).not.toBe(b)
    expect([cipher.open(a, "ctx"), cipher.open(b, "ctx")]).toEqual(["same", "same"])
  })

  it("refuses another context, another key, a changed byte, a cut text and other formats", () => {
    const k = key()
    const cipher = Cipher.make(k)
    const sealed = cipher.seal("secret", "ctx")
    expect(cipher.open(sealed, "ctx2")).toBeUndefined()
    expect(Cipher.make(key()).open(sealed, "ctx")).toBeUndefined()
    const body = sealed.slice(Cipher.SEALED_PREFIX.length)
    const flipped = `${body[0] === "A" ? "B" : "A"}${body.slice(1)}`
    expect(cipher.open(Cipher.SEALED_PREFIX + flipped, "ctx")).toBeUndefined()
    expect(cipher.open(sealed.slice(0, -4), "ctx")).toBeUndefined()
    expect(cipher.open(Cipher.SEALED_PREFIX, "ctx")).toBeUndefined()
    expect(cipher.open("secret", "ctx")).toBeUndefined()
    expect(cipher.open(`pbc2.${body}`, "ctx")).toBeUndefined()
    expect(cipher.open(`${sealed}!`, "ctx")).toBeUndefined()
    // the right key still opens it: nothing above consumed or damaged the original
    expect(Cipher.make(k).open(sealed, "ctx")).toBe("secret")
  })

  it("property: any text under any context round-trips; any other context or any changed byte is refused", () => {
    const cipher = Cipher.make(key())
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 400 }),
        fc.string({ maxLength: 60 }),
        fc.string({ maxLength: 60 }),
        fc.nat(),
        (plain, context, other, at) => {
          const sealed = cipher.seal(plain, context)
          expect(cipher.open(sealed, context)).toBe(plain)
          if (other !== context) expect(cipher.open(sealed, other)).toBeUndefined()
          const bytes = Buffer.from(sealed.slice(Cipher.SEALED_PREFIX.length), "base64url")
          const i = at % bytes.length
          bytes[i] = (bytes[i] ?? 0) ^ (1 + (at % 255))
          expect(cipher.open(Cipher.SEALED_PREFIX + bytes.toString("base64url"), context)).toBeUndefined()
        }
      ),
      { numRuns: 300 }
    )
  })

  it("refuses a key that is not 32 bytes (a caller's bug)", () => {
    expect(() => Cipher.make(new Uint8Array(16))).toThrow(RangeError)
    expect(() => Cipher.make("k".repeat(32) as never)).toThrow(/32 bytes, got a string/)
  })
})

describe("decodeKey", () => {
  const bytes = randomBytes(32)

  it("reads 64 hex digits, base64 and base64url (padded or not) to the same 32 bytes", () => {
    const forms = [
      bytes.toString("hex"),
      bytes.toString("hex").toUpperCase(),
      bytes.toString("base64"),
      bytes.toString("base64url"),
      `  ${bytes.toString("base64")}\n`
    ]
    for (const form of forms) {
      const decoded = Cipher.decodeKey(form)
      expect(Either.isRight(decoded) && Buffer.from(decoded.right).equals(bytes)).toBe(true)
    }
  })

  it("refuses anything else with the rule and the variable, never the value", () => {
    const secretish = "correct-horse-battery-staple"
    for (const text of [
      "",
      secretish,
      bytes.subarray(0, 16).toString("hex"),
      `${bytes.toString("hex")}00`,
      randomBytes(31).toString("base64"),
      randomBytes(33).toString("base64"),
      `${bytes.toString("hex").slice(0, 63)}g`
    ]) {
      const decoded = Cipher.decodeKey(text, "CONNECTIONS_KEY")
      expect(Either.isLeft(decoded)).toBe(true)
      if (Either.isLeft(decoded)) {
        expect(decoded.left).toContain("CONNECTIONS_KEY must be 32 random bytes")
        expect(decoded.left).toContain("openssl rand -base64 32")
        if (text.length > 0) expect(decoded.left).not.toContain(text.trim())
      }
    }
  })

  it("fromKeyText gives a working cipher", () => {
    const cipher = Cipher.fromKeyText(bytes.toString("base64"))
    expect(Either.isRight(cipher)).toBe(true)
    if (Either.isRight(cipher)) expect(cipher.right.open(cipher.right.seal("x", "c"), "c")).toBe("x")
  })
})

describe("key rotation", () => {
  it("seals with the current key; opens the current one's and each previous key's; stale only for a previous key", () => {
    const [current, older, oldest, stranger] = [key(), key(), key(), key()]
    const rotated = Cipher.make(current, [older, oldest])
    const byOlder = Cipher.make(older).seal("a", "ctx")
    const byOldest = Cipher.make(oldest).seal("b", "ctx")
    const byCurrent = rotated.seal("c", "ctx")
    expect([
      rotated.open(byOlder, "ctx"),
      rotated.open(byOldest, "ctx"),
      rotated.open(byCurrent, "ctx")
    ]).toEqual(["a", "b", "c"])
    expect(Cipher.make(current).open(byCurrent, "ctx")).toBe("c")
    expect([rotated.isStale?.(byOlder, "ctx"), rotated.isStale?.(byOldest, "ctx")]).toEqual([true, true])
    expect(rotated.isStale?.(byCurrent, "ctx")).toBe(false)
    // Neither another key's text nor a previous key's under another context opens, nor is stale.
    const byStranger = Cipher.make(stranger).seal("d", "ctx")
    expect([rotated.open(byStranger, "ctx"), rotated.isStale?.(byStranger, "ctx")]).toEqual([
      undefined,
      false
    ])
    expect([rotated.open(byOlder, "ctx2"), rotated.isStale?.(byOlder, "ctx2")]).toEqual([undefined, false])
    // Without the previous key, its text no longer opens.
    expect(Cipher.make(current).open(byOlder, "ctx")).toBeUndefined()
    expect(() => Cipher.make(current, [new Uint8Array(8)])).toThrow(RangeError)
  })

  it("fromKeyTexts reads the previous keys comma-separated; a bad one is named by position, never quoted", () => {
    const [current, older] = [randomBytes(32), randomBytes(32)]
    const ok = Cipher.fromKeyTexts(
      current.toString("base64"),
      ` ${older.toString("hex")} , ${randomBytes(32).toString("base64url")}`
    )
    expect(Either.isRight(ok)).toBe(true)
    if (Either.isRight(ok)) {
      expect(ok.right.open(Cipher.make(new Uint8Array(older)).seal("x", "c"), "c")).toBe("x")
    }
    const secretish = "hunter2-previous"
    const bad = Cipher.fromKeyTexts(current.toString("base64"), `${older.toString("hex")},${secretish},`)
    expect(Either.isLeft(bad)).toBe(true)
    if (Either.isLeft(bad)) {
      expect(bad.left).toHaveLength(2)
      expect(bad.left[0]).toContain("CONNECTIONS_KEY_PREVIOUS (key 2 of 3) must be 32 random bytes")
      expect(bad.left[1]).toContain("CONNECTIONS_KEY_PREVIOUS (key 3 of 3) must be 32 random bytes")
      expect(bad.left.join("\n")).not.toContain(secretish)
      expect(bad.left.join("\n")).not.toContain(older.toString("hex"))
    }
  })
})

describe("the vault with this cipher", () => {
  it("keeps no token text in the store, and a record moved to another user does not open", async () => {
    const store = ConnectionStore.makeMemory()
    const vault = TokenVault.make(store, Cipher.make(key()))
    const alice = "did:key:alice"
    const bob = "did:key:bob"
    await Effect.runPromise(vault.put(alice, "github", { access_token: "gho_SECRET_ALICE" }, 1))
    const stored = await Effect.runPromise(store.get(alice, "github"))
    expect(stored?.sealed).not.toContain("gho_SECRET_ALICE")
    expect(await Effect.runPromise(vault.get(alice, "github"))).toEqual({ access_token: "gho_SECRET_ALICE" })
    await Effect.runPromise(store.put(bob, "github", stored?.sealed ?? "", 2))
    const moved = await Effect.runPromise(Effect.flip(vault.get(bob, "github")))
    expect(moved.reason).toBe("sealed")
  })
})
