/**
 * Rotating `CONNECTIONS_KEY` (docs/oauth.md#at-rest): with the old key in
 * `CONNECTIONS_KEY_PREVIOUS`, a connection sealed under it still opens, and is sealed again under
 * the new key when used; once the old key is removed, a connection nobody used meanwhile does not
 * open and its user is `needs-connect` (not a crash), while the resealed one still works. A
 * malformed previous key stops boot naming the variable and the key's position, never a value.
 * Real components: the host's config, the AES-256-GCM cipher, the SQLite store's file; no
 * request leaves the process (the tokens are not due, the fetch fails the test if called).
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type ConnectionStore, TokenVault } from "@plugboard/core"
import { ConnectionsCipher, OAuthConnections } from "@plugboard/mcp"
import { connectionsFile, makeConnectionStore } from "@plugboard/sqlite"
import { Effect, Either, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fromEnv } from "../../src/Config.js"

const ALICE = "did:key:z6MkAlice"
const oldKey = randomBytes(32)
const newKey = randomBytes(32)
let dir: string
let scope: Scope.CloseableScope
let store: ConnectionStore.ConnectionStoreService

const cipherOf = async (env: Record<string, string>) => {
  const config = await Effect.runPromise(fromEnv(env, dir))
  if (config.connectionsCipher === undefined) throw new Error("CONNECTIONS_KEY was set")
  return config.connectionsCipher
}

const record = (token: string) => ({
  v: 1,
  issuer: "http://127.0.0.1:1",
  resource: "http://127.0.0.1:1/mcp",
  client: { client_id: "client-of-alice", source: "registered" },
  tokens: { access_token: token, token_type: "Bearer", obtainedAtMs: 1 }
})

const connectionsWith = (cipher: TokenVault.Cipher) =>
  OAuthConnections.make({
    vault: TokenVault.make(store, cipher),
    cipher,
    redirectUri: "http://127.0.0.1:1/oauth/callback",
    servers: [
      { name: "notes", url: "http://127.0.0.1:1/mcp" },
      { name: "linear", url: "http://127.0.0.1:1/mcp" }
    ],
    fetch: async (url) => {
      throw new Error(`no request may be sent here, got ${String(url)}`)
    }
  })

const sealedOf = async (server: string) => (await Effect.runPromise(store.get(ALICE, server)))?.sealed ?? ""

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "plugboard-key-rotation-"))
  scope = Effect.runSync(Scope.make())
  store = await Effect.runPromise(
    Scope.extend(makeConnectionStore({ filename: connectionsFile(dir) }), scope)
  )
})

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe("rotating CONNECTIONS_KEY", () => {
  it("old records open with the old key as previous, are resealed when used, and one not used does not open once it is removed", async () => {
    const before = await cipherOf({ CONNECTIONS_KEY: oldKey.toString("base64") })
    const vault = TokenVault.make(store, before)
    await Effect.runPromise(vault.put(ALICE, "notes", record("at-notes"), 1))
    await Effect.runPromise(vault.put(ALICE, "linear", record("at-linear"), 1))
    const sealedBefore = await sealedOf("notes")

    // Rotated: the new key, the old one (with another earlier one) as previous.
    const rotated = await cipherOf({
      CONNECTIONS_KEY: newKey.toString("hex"),
      CONNECTIONS_KEY_PREVIOUS: `${randomBytes(32).toString("base64")}, ${oldKey.toString("base64")}`
    })
    const during = connectionsWith(rotated)
    expect(await Effect.runPromise(during.accessToken(ALICE, "notes"))).toBe("at-notes")
    // Used, it was sealed again under the new key: the new key alone opens it now.
    const sealedAfter = await sealedOf("notes")
    expect(sealedAfter).not.toBe(sealedBefore)
    const newOnly = ConnectionsCipher.make(new Uint8Array(newKey))
    expect(newOnly.open(sealedAfter, TokenVault.sealContext(ALICE, "notes"))).toContain("at-notes")
    expect(newOnly.open(sealedBefore, TokenVault.sealContext(ALICE, "notes"))).toBeUndefined()
    // A write seals under the new key too.
    await Effect.runPromise(TokenVault.make(store, rotated).put(ALICE, "github", record("at-github"), 2))
    expect(newOnly.open(await sealedOf("github"), TokenVault.sealContext(ALICE, "github"))).toContain(
      "at-github"
    )

    // The old key removed: the resealed record works; the one nobody used is needs-connect.
    const after = connectionsWith(await cipherOf({ CONNECTIONS_KEY: newKey.toString("base64") }))
    expect(await Effect.runPromise(after.accessToken(ALICE, "notes"))).toBe("at-notes")
    const refused = await Effect.runPromise(Effect.flip(after.accessToken(ALICE, "linear")))
    expect(refused.reason).toBe("needs-connect")
    expect(refused.message).toContain("does not open with this host's key")
    expect(await Effect.runPromise(after.list(ALICE))).toMatchObject([
      { server: "github", connected: true },
      { server: "linear", connected: false, problem: expect.stringContaining("connect your account") },
      { server: "notes", connected: true }
    ])
  })

  it("a malformed previous key stops boot naming the variable and its position, never a value", async () => {
    const secretish = "hunter2-old-key"
    const result = await Effect.runPromise(
      Effect.either(
        fromEnv(
          {
            CONNECTIONS_KEY: newKey.toString("base64"),
            CONNECTIONS_KEY_PREVIOUS: `${oldKey.toString("base64")},${secretish}`
          },
          dir
        )
      )
    )
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      const lines = result.left.lines.join("\n")
      expect(lines).toContain("[config-error] CONNECTIONS_KEY_PREVIOUS (key 2 of 2) must be 32 random bytes")
      expect(lines).not.toContain(secretish)
      expect(lines).not.toContain(oldKey.toString("base64"))
      expect(lines).not.toContain(newKey.toString("base64"))
    }
    const orphan = await Effect.runPromise(
      Effect.either(fromEnv({ CONNECTIONS_KEY_PREVIOUS: oldKey.toString("base64") }, dir))
    )
    expect(Either.isLeft(orphan) && orphan.left.lines.join("\n")).toContain(
      "[config-error] CONNECTIONS_KEY_PREVIOUS is set but CONNECTIONS_KEY is not"
    )
  })
})
