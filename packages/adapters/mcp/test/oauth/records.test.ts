/**
 * The connections' conditional writes (Records.ts, docs/oauth.md#several-hosts) over the real
 * cipher and the in-memory store: a write names the version it was computed from, an update
 * reads again after a conflict and decides on the latest record, and a record that keeps
 * changing under the writer ends in a clear `unavailable`, with nothing of this writer's stored.
 */
import { randomBytes } from "node:crypto"
import { ConnectionStore, TokenVault } from "@plugboard/core"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import * as Cipher from "../../src/oauth/Cipher.js"
import { OAuthError } from "../../src/oauth/OAuthError.js"
import * as Records from "../../src/oauth/Records.js"
import type * as Secret from "../../src/oauth/Secret.js"

const ALICE = "did:key:z6MkAlice"
const secret = (token: string): Secret.Secret => ({
  v: 1,
  issuer: "http://127.0.0.1:1",
  resource: "http://127.0.0.1:1/mcp",
  client: { client_id: "c1", source: "registered" },
  tokens: { access_token: token, token_type: "Bearer", obtainedAtMs: 1 }
})

const recordsOver = (store: ConnectionStore.ConnectionStoreService) =>
  Records.make({
    vault: TokenVault.make(store, Cipher.make(new Uint8Array(randomBytes(32)))),
    now: () => 1,
    fromVault: (server) => (e) => new OAuthError({ reason: "unavailable", server, message: e.message }),
    needsConnect: (server, why) => new OAuthError({ reason: "needs-connect", server, message: why })
  })

describe("the connections' conditional writes", () => {
  it("a write over a stale version is a Conflict; an update reads again and decides on the latest", async () => {
    const records = recordsOver(ConnectionStore.makeMemory())
    const v1 = await Effect.runPromise(records.writeIf(ALICE, "notes", undefined, secret("at-1")))
    const stale = await Effect.runPromise(records.read(ALICE, "notes"))
    await Effect.runPromise(records.writeIf(ALICE, "notes", v1, secret("at-2")))
    const conflict = await Effect.runPromise(Effect.flip(records.writeIf(ALICE, "notes", v1, secret("at-3"))))
    expect(conflict).toBeInstanceOf(Records.Conflict)
    const seen: Array<string | undefined> = []
    const written = await Effect.runPromise(
      records.update(ALICE, "notes", stale, (latest) => {
        seen.push(latest?.tokens?.access_token)
        return latest === undefined
          ? undefined
          : { ...latest, pending: undefined, tokens: secret("at-4").tokens }
      })
    )
    // First decided on the stale record (at-1), refused, then on the latest (at-2).
    expect(seen).toEqual(["at-1", "at-2"])
    expect(written?.tokens?.access_token).toBe("at-4")
    expect((await Effect.runPromise(records.read(ALICE, "notes"))).record?.tokens?.access_token).toBe("at-4")
  })

  it("a record that keeps changing under the writer ends in unavailable, and nothing of its write is stored", async () => {
    const store = ConnectionStore.makeMemory()
    // Another writer replaces the record after every read of this one.
    let other = 0
    const busy: ConnectionStore.ConnectionStoreService = {
      ...store,
      get: (user, server) =>
        Effect.tap(store.get(user, server), () => store.put(user, server, `other-${++other}`, other))
    }
    const records = recordsOver(busy)
    const first = await Effect.runPromise(records.read(ALICE, "notes"))
    const error = await Effect.runPromise(
      Effect.flip(records.update(ALICE, "notes", first, () => secret("mine")))
    )
    expect(error).toBeInstanceOf(OAuthError)
    expect([error.reason, error.message]).toEqual([
      "unavailable",
      "the connection to 'notes' kept changing under this host (other hosts writing it); try again"
    ])
    expect((await Effect.runPromise(store.get(ALICE, "notes")))?.sealed).toMatch(/^other-/)
  })
})
