/**
 * A UCAN invocation replayed (issue 36, item 10), over real sockets. The policy is a choice
 * (docs/spec/wire.md#replay): by default a token authenticates every request it comes with while
 * it is valid, because QiForge's client sends one invocation until it nearly expires; with
 * `UCAN_REPLAY=once` each invocation authenticates one request, on one host and across two
 * sharing Redis.
 */
import { generateSigner } from "@plugboard/ucan"
import { afterAll, describe, expect, it } from "vitest"
import { call, headersFor, start } from "./helpers.js"
import { ENGINES, SKIP_REASON, sharedEngines } from "./manyHostsHelpers.js"

describe("a replayed invocation (issue 36, item 10)", () => {
  it("by default (UCAN_REPLAY=reuse) a token is taken as often as it comes while valid: what QiForge's client needs", async () => {
    const server = await start()
    try {
      const headers = await headersFor(await generateSigner(), server.app.oracleDid)
      for (let i = 0; i < 3; i++) {
        expect((await call(`${server.url}/sessions`, { headers })).status).toBe(200)
      }
    } finally {
      await server.stop()
    }
  })

  it("UCAN_REPLAY=once: the second use of an invocation is a 401 `replayed`; a fresh one is taken; a bare delegation is refused", async () => {
    const server = await start({ env: { UCAN_REPLAY: "once" } })
    try {
      const signer = await generateSigner()
      const headers = await headersFor(signer, server.app.oracleDid)
      expect((await call(`${server.url}/sessions`, { headers })).status).toBe(200)
      const replay = await call(`${server.url}/sessions`, { headers })
      expect(replay.status).toBe(401)
      expect(replay.body).toMatchObject({ statusCode: 401, error: "replayed" })
      expect(replay.body.message).toMatch(/already used/)
      // Replayed on another route, or with a turn: the same answer, and nothing ran.
      const turn = await call(`${server.url}/messages/replayed`, {
        method: "POST",
        headers,
        body: { message: "What's the weather in Berlin?" }
      })
      expect(turn.status).toBe(401)
      const fresh = await headersFor(signer, server.app.oracleDid)
      const listed = await call(`${server.url}/sessions`, { headers: fresh })
      expect(listed.status).toBe(200)
      expect(listed.body.sessions).toEqual([])
      const { authorization, "x-auth-type": _type, ...rest } = await headersFor(signer, server.app.oracleDid)
      const bare = await call(`${server.url}/sessions`, {
        headers: { ...rest, "x-ucan-delegation": authorization.replace(/^Bearer /, "") }
      })
      expect(bare.status).toBe(401)
      expect(bare.body.message).toMatch(/UCAN_REPLAY=once/)
    } finally {
      await server.stop()
    }
  })

  describe.skipIf(!ENGINES)(`across two hosts on Redis${ENGINES ? "" : `: ${SKIP_REASON}`}`, () => {
    const engines = sharedEngines("replay")
    afterAll(() => engines.drop())

    it("UCAN_REPLAY=once: an invocation used on host A is a replay on host B", async () => {
      const identity = { signer: await generateSigner() }
      const env = { ...engines.env, UCAN_REPLAY: "once" }
      const [a, b] = [await start({ identity, env }), await start({ identity, env })]
      try {
        const signer = await generateSigner()
        const headers = await headersFor(signer, a.app.oracleDid)
        expect((await call(`${a.url}/sessions`, { headers })).status).toBe(200)
        const replay = await call(`${b.url}/sessions`, { headers })
        expect(replay.status).toBe(401)
        expect(replay.body.error).toBe("replayed")
        const fresh = await headersFor(signer, a.app.oracleDid)
        expect((await call(`${b.url}/sessions`, { headers: fresh })).status).toBe(200)
        expect((await call(`${a.url}/sessions`, { headers: fresh })).status).toBe(401)
      } finally {
        await Promise.all([a.stop(), b.stop()])
      }
    }, 60_000)
  })
})
