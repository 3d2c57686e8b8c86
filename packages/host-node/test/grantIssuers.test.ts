/**
 * `UCAN_GRANT_ISSUERS` (docs/plugins.md#requiring-capabilities): an authority besides the oracle whose
 * delegations grant the capabilities plugins require; a malformed list stops boot.
 */

import { definePlugin } from "@plugboard/core"
import { generateSigner, mintDelegation, mintInvocation } from "@plugboard/ucan"
import { describe, expect, it } from "vitest"
import { bootLines, call, start, weather } from "./helpers.js"

const ADMIN = { can: "admin/read", with: "ixo:oracle" }

const admin = definePlugin({
  name: "admin",
  manifest: { title: "Admin", summary: "Admin figures.", whenToUse: ["When an administrator asks."] },
  requires: [ADMIN],
  routes: [{ method: "GET", path: "/admin/figures", handler: () => ({ body: { ok: true } }) }]
})

describe("UCAN_GRANT_ISSUERS", () => {
  it("a delegation from a listed DID grants; the same from an unlisted one does not", async () => {
    const authority = await generateSigner()
    const stranger = await generateSigner()
    const running = await start({ plugins: [weather, admin], env: { UCAN_GRANT_ISSUERS: authority.did() } })
    try {
      const statusWith = async (issuer: typeof authority) => {
        const user = await generateSigner()
        const proof = await mintDelegation({
          issuer,
          audience: user.did(),
          capabilities: [ADMIN],
          withoutOracleCapability: true,
          ttlSeconds: 3600
        })
        const token = await mintInvocation({
          issuer: user,
          audience: running.app.oracleDid,
          capabilities: [ADMIN],
          proofs: [proof]
        })
        const r = await call(`${running.url}/admin/figures`, {
          headers: { authorization: `Bearer ${token}`, "x-auth-type": "ucan" }
        })
        return r.status
      }
      expect(await statusWith(authority)).toBe(200)
      expect(await statusWith(stranger)).toBe(403)
    } finally {
      await running.stop()
    }
  })

  it("a value that is not a list of DIDs is a boot error naming the variable", async () => {
    const lines = await bootLines([weather], { UCAN_GRANT_ISSUERS: "did:key:z6Mk, admin" })
    expect(lines.some((l) => l.includes("UCAN_GRANT_ISSUERS must be comma-separated DIDs"))).toBe(true)
  })
})
