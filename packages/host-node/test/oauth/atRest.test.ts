/**
 * Users' OAuth connections at rest: sealed by the vault with the AES-256-GCM cipher that
 * `CONNECTIONS_KEY` configures, into the SQLite store's file (the gateway's `connections.sqlite`)
 * and into the user's own database (the server's embedded default, which Matrix sync uploads).
 * The test then opens each file as anyone could without the key (Node's own `node:sqlite`) and
 * finds neither token, nor any other field of the secret; with the key, and only under the right
 * user, the record opens.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { TokenVault } from "@plugboard/core"
import {
  connectionsFile,
  makeConnectionStore,
  makeUserConnectionStore,
  UserDatabaseRegistry
} from "@plugboard/sqlite"
import { Effect, Either } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { fromEnv } from "../../src/Config.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const ACCESS = "eyJhbGciOiJSUzI1NiJ9.ACCESS-TOKEN-OF-ALICE"
const REFRESH = "REFRESH-TOKEN-OF-ALICE-0123456789"

describe("OAuth connections at rest", () => {
  it("the SQLite file holds no token text without the key, and opens only with it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-at-rest-"))
    dirs.push(dir)
    const key = randomBytes(32).toString("base64")
    const config = await Effect.runPromise(fromEnv({ CONNECTIONS_KEY: key }, dir))
    const cipher = config.connectionsCipher
    if (cipher === undefined) throw new Error("CONNECTIONS_KEY was set, so the config has a cipher")
    const filename = connectionsFile(dir)
    const secret = {
      tokens: { access_token: ACCESS, refresh_token: REFRESH, token_type: "Bearer" },
      client: { client_id: "client-of-alice", client_secret: "CLIENT-SECRET-XYZ" }
    }
    await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(makeConnectionStore({ filename }), (store) =>
          TokenVault.make(store, cipher).put("did:key:alice", "linear", secret, 1_000)
        )
      )
    )

    // Without the key: the raw file, and every column of every row.
    const bytes = readFileSync(filename).toString("latin1")
    const db = new DatabaseSync(filename, { readOnly: true })
    const rows = db.prepare("SELECT * FROM connections").all() as Array<Record<string, unknown>>
    db.close()
    expect(rows.map((r) => [r.user_did, r.server])).toEqual([["did:key:alice", "linear"]])
    for (const text of [ACCESS, REFRESH, "ACCESS-TOKEN", "CLIENT-SECRET-XYZ", "client-of-alice", "Bearer"]) {
      expect(bytes).not.toContain(text)
      expect(JSON.stringify(rows)).not.toContain(text)
    }

    // With the key: it opens for alice, not when moved to bob, not under another key.
    const read = (user: string, c: TokenVault.Cipher) =>
      Effect.runPromise(
        Effect.scoped(
          Effect.flatMap(makeConnectionStore({ filename }), (store) =>
            Effect.either(TokenVault.make(store, c).get(user, "linear"))
          )
        )
      )
    expect(await read("did:key:alice", cipher)).toEqual(Either.right(secret))
    const other = await Effect.runPromise(fromEnv({ CONNECTIONS_KEY: randomBytes(32).toString("hex") }, dir))
    const wrongKey = await read("did:key:alice", other.connectionsCipher!)
    expect(Either.isLeft(wrongKey) && wrongKey.left.reason).toBe("sealed")
  })

  it("the user's own database holds no token text without the key, and opens only with it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plugboard-at-rest-users-"))
    dirs.push(dir)
    const config = await Effect.runPromise(fromEnv({ CONNECTIONS_KEY: randomBytes(32).toString("hex") }, dir))
    const cipher = config.connectionsCipher!
    const secret = {
      tokens: { access_token: ACCESS, refresh_token: REFRESH, token_type: "Bearer" },
      client: { client_id: "client-of-alice", client_secret: "CLIENT-SECRET-XYZ" }
    }
    const withVault = async <A>(f: (vault: TokenVault.TokenVaultService) => Effect.Effect<A, unknown>) => {
      const registry = new UserDatabaseRegistry({ directory: join(dir, "users") })
      try {
        return await Effect.runPromise(
          Effect.scoped(
            Effect.flatMap(makeUserConnectionStore(registry), (store) => f(TokenVault.make(store, cipher)))
          ) as Effect.Effect<A>
        )
      } finally {
        await registry.close()
      }
    }
    await withVault((vault) => vault.put("did:key:alice", "linear", secret, 1_000))

    const filename = new UserDatabaseRegistry({ directory: join(dir, "users") }).databasePath("did:key:alice")
    const bytes = readFileSync(filename).toString("latin1")
    const db = new DatabaseSync(filename, { readOnly: true })
    const rows = db.prepare("SELECT * FROM connections").all() as Array<Record<string, unknown>>
    db.close()
    expect(rows.map((r) => r.server)).toEqual(["linear"])
    for (const text of [ACCESS, REFRESH, "ACCESS-TOKEN", "CLIENT-SECRET-XYZ", "client-of-alice", "Bearer"]) {
      expect(bytes).not.toContain(text)
      expect(JSON.stringify(rows)).not.toContain(text)
    }
    expect(await withVault((vault) => vault.get("did:key:alice", "linear"))).toEqual(secret)
  })

  it("a CONNECTIONS_KEY that is no key stops boot with the rule, without echoing the value", async () => {
    const result = await Effect.runPromise(
      Effect.either(fromEnv({ CONNECTIONS_KEY: "hunter2-not-a-key" }, tmpdir()))
    )
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      const lines = result.left.lines.join("\n")
      expect(lines).toContain("[config-error] CONNECTIONS_KEY must be 32 random bytes")
      expect(lines).not.toContain("hunter2")
    }
    const unset = await Effect.runPromise(fromEnv({}, tmpdir()))
    expect(unset.connectionsCipher).toBeUndefined()
  })
})
