/**
 * The auth stage over real sockets: every bad credential is a JSON 401 and the agent never runs;
 * fuzzed headers and bodies always get a JSON 4xx, never a 500 or a crash.
 */
import { connect } from "node:net"
import { definePlugin } from "@plugboard/core"
import { encodeToken, generateSigner, mintInvocation } from "@plugboard/ucan"
import { type API, Delegation, invoke } from "@ucanto/core"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, headersFor, newSession, type Running, start, user, weather } from "./helpers.js"

const nowSeconds = () => Math.floor(Date.now() / 1000)

const craft = async (options: {
  issuer: Awaited<ReturnType<typeof generateSigner>>
  audience: string
  with?: string
  can?: string
  expiration: number
  notBefore?: number
}) =>
  encodeToken(
    await invoke({
      issuer: options.issuer,
      audience: { did: () => options.audience as API.DID },
      capability: {
        can: (options.can ?? "*") as API.Ability,
        with: (options.with ?? "ixo:oracle") as API.Resource
      },
      expiration: options.expiration,
      ...(options.notBefore === undefined ? {} : { notBefore: options.notBefore })
    }).buildIPLDView()
  )

const flipSignatureBit = async (token: string): Promise<string> => {
  const bytes = new Uint8Array(Buffer.from(token, "base64"))
  const extracted = await Delegation.extract(bytes)
  if (extracted.error) throw extracted.error
  const signature = extracted.ok.signature
  const at = Buffer.from(bytes).indexOf(Buffer.from(signature))
  const tampered = Uint8Array.from(bytes)
  tampered[at + signature.length - 1]! ^= 0x01
  return Buffer.from(tampered).toString("base64")
}

const routed = definePlugin({
  name: "stations",
  manifest: {
    title: "Stations",
    summary: "Weather station listing over HTTP.",
    whenToUse: ["When a client lists weather stations."]
  },
  routes: [
    {
      method: "GET",
      path: "/stations",
      handler: (r) => ({ body: { stations: ["Berlin"], user: r.userDid } })
    },
    {
      method: "GET",
      path: "/stations/public",
      public: true,
      handler: (r) => ({ body: { open: true, user: r.userDid ?? null } })
    },
    {
      method: "GET",
      path: "/stations/:country/:city",
      handler: (r) => ({ body: { params: r.params, query: r.query } })
    },
    { method: "POST", path: "/stations/refresh", handler: () => ({}) }
  ]
})

let server: Running
const bearer = (token: string) => ({ authorization: `Bearer ${token}`, "x-auth-type": "ucan" })

beforeAll(async () => {
  server = await start({ plugins: [weather, routed] })
})
afterAll(() => server.stop())

const expectJson401 = (r: { status: number; body: { statusCode?: unknown; message?: unknown } }) => {
  expect(r.status).toBe(401)
  expect(r.body).toMatchObject({ statusCode: 401 })
  expect(typeof r.body.message).toBe("string")
}

describe("401", () => {
  it("no header, garbage, wrong scheme, missing X-Auth-Type", async () => {
    expectJson401(await call(`${server.url}/sessions`))
    expectJson401(await call(`${server.url}/sessions`, { headers: bearer("garbage!!") }))
    expectJson401(await call(`${server.url}/sessions`, { headers: bearer("QUJD") }))
    expectJson401(
      await call(`${server.url}/sessions`, { headers: { authorization: "Basic abc", "x-auth-type": "ucan" } })
    )
    expectJson401(await call(`${server.url}/sessions`, { headers: { "x-ucan-delegation": "not-a-ucan" } }))
  })

  it("a valid invocation as Bearer without X-Auth-Type: ucan is refused (the contract's header pair)", async () => {
    const u = await user(server.app.oracleDid)
    const { authorization } = u.headers
    const noType = await call(`${server.url}/sessions`, { headers: { authorization } })
    expectJson401(noType)
    expect(noType.body.error).toBe("malformed")
    expect(noType.body.message).toMatch(/X-Auth-Type: ucan/)
    const otherType = await call(`${server.url}/sessions`, {
      headers: { authorization, "x-auth-type": "jwt" }
    })
    expectJson401(otherType)
    expect(otherType.body.error).toBe("unsupported")
    // The same token with the header pair passes, and the type is case-insensitive.
    for (const type of ["ucan", "UCAN"]) {
      expect(
        (await call(`${server.url}/sessions`, { headers: { authorization, "x-auth-type": type } })).status
      ).toBe(200)
    }
  })

  it("another audience, expired, not yet valid, no expiry, expiry beyond 15 min, bad signature, wrong capability", async () => {
    const issuer = await generateSigner()
    const oracle = server.app.oracleDid
    const other = (await generateSigner()).did()
    const cases: Record<string, string> = {
      audience: await mintInvocation({ issuer, audience: other }),
      expired: await craft({ issuer, audience: oracle, expiration: nowSeconds() - 60 }),
      notYetValid: await craft({
        issuer,
        audience: oracle,
        expiration: nowSeconds() + 300,
        notBefore: nowSeconds() + 120
      }),
      noExpiry: await craft({ issuer, audience: oracle, expiration: Infinity }),
      tooFar: await craft({ issuer, audience: oracle, expiration: nowSeconds() + 16 * 60 }),
      badSignature: await flipSignatureBit(await mintInvocation({ issuer, audience: oracle })),
      wrongResource: await craft({
        issuer,
        audience: oracle,
        with: "ixo:elsewhere",
        expiration: nowSeconds() + 300
      }),
      wrongAbility: await craft({
        issuer,
        audience: oracle,
        can: "store/add",
        expiration: nowSeconds() + 300
      })
    }
    const reasons: Record<string, string> = {}
    for (const [name, token] of Object.entries(cases)) {
      const r = await call(`${server.url}/sessions`, { headers: bearer(token) })
      expectJson401(r)
      reasons[name] = r.body.error
    }
    expect(reasons).toMatchObject({
      audience: "wrong-audience",
      expired: "expired",
      notYetValid: "not-yet-valid",
      noExpiry: "no-expiry",
      tooFar: "expiry-too-far",
      badSignature: "bad-signature",
      wrongResource: "wrong-capability",
      wrongAbility: "wrong-capability"
    })
    // The agent never ran: no session exists for that issuer (its DID was never accepted).
    const good = await headersFor(issuer, oracle)
    expect((await call(`${server.url}/sessions`, { headers: good })).body.total).toBe(0)
  })

  it("a valid token passes; unknown routes behind auth are JSON 404", async () => {
    const u = await user(server.app.oracleDid)
    expect((await call(`${server.url}/sessions`, { headers: u.headers })).status).toBe(200)
    const r = await call(`${server.url}/no/such/route`, { headers: u.headers })
    expect(r.status).toBe(404)
    expect(r.body).toMatchObject({ statusCode: 404, error: "Not Found" })
    expect((await call(`${server.url}/health`)).body).toMatchObject({
      status: "ok",
      oracleDid: server.app.oracleDid
    })
  })
})

describe("unknown routes", () => {
  const unknown: ReadonlyArray<readonly [string, string]> = [
    ["GET", "/no/such/route"],
    ["POST", "/nope"],
    ["DELETE", "/sessions"], // known path, method it does not take
    ["PUT", "/messages/abc"],
    ["POST", "/health"],
    ["DELETE", "/stations"]
  ]

  it("are a JSON 404 before the pipeline, with or without a token; known routes still need one", async () => {
    const u = await user(server.app.oracleDid)
    for (const [method, path] of unknown) {
      for (const headers of [{}, bearer("garbage"), u.headers]) {
        const r = await call(`${server.url}${path}`, { method, headers })
        expect({ method, path, status: r.status }).toEqual({ method, path, status: 404 })
        expect(r.body).toEqual({ statusCode: 404, message: `Cannot ${method} ${path}`, error: "Not Found" })
      }
    }
    // Known protected routes (built-in and a plugin's) still answer 401 without a token.
    for (const path of ["/sessions", "/messages/abc", "/stations", "/sessions?limit=1"]) {
      expectJson401(await call(`${server.url}${path}`))
    }
    expect((await call(`${server.url}/sessions?limit=1`, { headers: u.headers })).status).toBe(200)
  })

  it("take no rate-limit slot (the pipeline never ran)", async () => {
    const limited = await start({ plugins: [weather, routed], env: { THROTTLE_LIMIT: "2" } })
    try {
      const u = await user(limited.app.oracleDid)
      for (let i = 0; i < 5; i++) {
        expect((await call(`${limited.url}/no/such/route`, { headers: u.headers })).status).toBe(404)
      }
      expect((await call(`${limited.url}/sessions`, { headers: u.headers })).status).toBe(200)
      expect((await call(`${limited.url}/stations`, { headers: u.headers })).status).toBe(200)
      expect((await call(`${limited.url}/sessions`, { headers: u.headers })).status).toBe(429)
    } finally {
      await limited.stop()
    }
  })
})

describe("CORS", () => {
  it("preflights without credentials; every answer carries the allowed origin", async () => {
    const preflight = await fetch(`${server.url}/messages/abc`, {
      method: "OPTIONS",
      headers: { origin: "https://portal.example", "access-control-request-method": "POST" }
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*")
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/x-ucan-delegation/)
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/x-auth-type/)
    const refused = await call(`${server.url}/sessions`)
    expect(refused.status).toBe(401)
    expect(refused.headers.get("access-control-allow-origin")).toBe("*")
  })
})

describe("plugin routes", () => {
  it("answer through the pipeline (401 without a token) unless public", async () => {
    expectJson401(await call(`${server.url}/stations`))
    const u = await user(server.app.oracleDid)
    const ok = await call(`${server.url}/stations`, { headers: u.headers })
    expect(ok).toMatchObject({ status: 200, body: { stations: ["Berlin"], user: u.did } })
    // `:param` segments reach the handler decoded; the literal route still wins its own path.
    expect(await call(`${server.url}/stations/de/K%C3%B6ln?near=1`, { headers: u.headers })).toMatchObject({
      status: 200,
      body: { params: { country: "de", city: "Köln" }, query: { near: "1" } }
    })
    expect(await call(`${server.url}/stations/public`)).toMatchObject({
      status: 200,
      body: { open: true, user: null }
    })
    // A handler that answers no body still answers JSON: clients parse every success as JSON.
    const refreshed = await call(`${server.url}/stations/refresh`, { method: "POST", headers: u.headers })
    expect(refreshed).toMatchObject({ status: 200, body: {} })
    expect(refreshed.headers.get("content-type")).toMatch(/application\/json/)
  })
})

describe("fuzzing", () => {
  const headerValue = fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    maxLength: 300
  })

  it("fuzzed credential headers always get a JSON 4xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          { authorization: headerValue, "x-auth-type": headerValue, "x-ucan-delegation": headerValue },
          { requiredKeys: [] }
        ),
        fc.constantFrom("/sessions", "/messages/abc", "/stations", "/nope"),
        async (headers, path) => {
          const r = await call(`${server.url}${path}`, { headers })
          expect(r.status).toBeGreaterThanOrEqual(400)
          expect(r.status).toBeLessThan(500)
          expect(r.body.statusCode).toBe(r.status)
        }
      ),
      { numRuns: 80 }
    )
  })

  it("fuzzed JSON bodies never get a 500", async () => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    const bodies = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc
        .record({ message: fc.jsonValue({ maxDepth: 2 }), stream: fc.jsonValue({ maxDepth: 1 }) })
        .map((v) => JSON.stringify(v)),
      fc.record({ sessionId: fc.jsonValue({ maxDepth: 2 }) }).map((v) => JSON.stringify(v))
    )
    await fc.assert(
      fc.asyncProperty(
        bodies,
        fc.constantFrom(`/messages/${session}`, "/messages/abort", "/sessions", "/stations"),
        fc.constantFrom("POST", "DELETE", "PUT"),
        async (body, path, method) => {
          const r = await call(`${server.url}${path}`, { method, headers: u.headers, body })
          expect(r.status).not.toBe(500)
          if (r.status >= 400) {
            expect(r.status).toBeLessThan(500)
            expect(r.body.statusCode).toBe(r.status)
          }
        }
      ),
      { numRuns: 80 }
    )
  })

  it("huge bodies are 413, malformed paths and HTTP are JSON 400", async () => {
    const u = await user(server.app.oracleDid)
    const session = await newSession(server.url, u.headers)
    const big = await call(`${server.url}/messages/${session}`, {
      method: "POST",
      headers: u.headers,
      body: JSON.stringify({ message: "x".repeat(2 * 1024 * 1024) })
    })
    expect(big).toMatchObject({ status: 413, body: { statusCode: 413 } })
    const badPath = await call(`${server.url}/messages/%E0%A4%A`, { headers: u.headers })
    expect(badPath.status).toBe(400)
    const raw = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(server.url).port), "127.0.0.1", () =>
        socket.write("GARBAGE\r\n\r\n")
      )
      let text = ""
      socket.on("data", (d) => {
        text += d.toString()
      })
      socket.on("close", () => resolve(text))
    })
    expect(raw).toMatch(/^HTTP\/1.1 400/)
    expect(JSON.parse(raw.split("\r\n\r\n")[1]!)).toMatchObject({ statusCode: 400 })
    // Still serving.
    expect((await call(`${server.url}/health`)).status).toBe(200)
  })
})
