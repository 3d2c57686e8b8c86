/**
 * UCAN auth throughput, verifications per second (one core, sequential awaits):
 *
 * 1. cold: every token seen for the first time (decode, signature, claims, ucanto `access`);
 * 2. cached: the same token again (SHA-256 of the token and an LRU lookup);
 * 3. for scale, the Ed25519 signature check alone, node:crypto (used) vs ucanto's pure-JS
 *    `@noble/ed25519` (its default), on the same signed payload.
 */
import { generateSigner, makeUcanVerifier, mintInvocation } from "@plugboard/ucan"
import * as NativeEd25519 from "../packages/adapters/ucan/src/NativeEd25519.js"

const COLD_TOKENS = 2_000
const CACHED_ROUNDS = 200_000
const SIGNATURE_ROUNDS = 2_000

/** Runs `body` once and returns its rate by wall clock and by this process's CPU time. */
const measure = async (count: number, body: () => Promise<void>): Promise<string> => {
  const cpu = process.cpuUsage()
  const started = performance.now()
  await body()
  const wallMillis = performance.now() - started
  const used = process.cpuUsage(cpu)
  const cpuMillis = (used.user + used.system) / 1000
  const rate = (millis: number) => Math.round((count / millis) * 1000).toLocaleString("en-US")
  // The CPU-time rate is what one uncontended core would do; the wall rate is what this run saw.
  return `${rate(cpuMillis).padStart(9)}/s per CPU-second   (${rate(wallMillis)}/s wall clock)`
}

export default async (): Promise<void> => {
  const oracle = await generateSigner()
  // 21 users against 500 lifetimes: (user, lifetime) pairs repeat only after 10,500 tokens.
  const users = await Promise.all(Array.from({ length: 21 }, () => generateSigner()))
  const tokens: string[] = []
  for (let i = 0; i < COLD_TOKENS; i++) {
    const issuer = users[i % users.length]
    if (issuer === undefined) throw new Error("unreachable")
    tokens.push(await mintInvocation({ issuer, audience: oracle.did(), ttlSeconds: 300 + (i % 500) }))
  }
  const headers = tokens.map((token) => ({ authorization: `Bearer ${token}`, authType: "ucan" }))

  // Warm the code paths (JIT, module-level caches) on a throwaway verifier.
  const warm = makeUcanVerifier({ oracleDid: oracle.did() })
  for (const h of headers.slice(0, 200)) await warm.verify(h)

  const verifier = makeUcanVerifier({ oracleDid: oracle.did(), cacheSize: COLD_TOKENS })
  const cold = await measure(COLD_TOKENS, async () => {
    for (const h of headers) await verifier.verify(h)
  })
  if (verifier.stats().verifications !== COLD_TOKENS) throw new Error("cold run was not cold")

  const first = headers[0]
  if (first === undefined) throw new Error("unreachable")
  const cached = await measure(CACHED_ROUNDS, async () => {
    for (let i = 0; i < CACHED_ROUNDS; i++) await verifier.verify(first)
  })
  if (verifier.stats().verifications !== COLD_TOKENS) throw new Error("cached run verified again")

  // The signature check alone.
  const signer = await generateSigner()
  const payload = new TextEncoder().encode("x".repeat(300))
  const signature = await signer.sign(payload)
  const noble = signer.verifier // ucanto's own (pure-JS) verifier for this key
  const native = NativeEd25519.parse(signer.did())
  const nativeRate = await measure(SIGNATURE_ROUNDS, async () => {
    for (let i = 0; i < SIGNATURE_ROUNDS; i++)
      if (!(await native.verify(payload, signature))) throw new Error("native")
  })
  const nobleRate = await measure(SIGNATURE_ROUNDS, async () => {
    for (let i = 0; i < SIGNATURE_ROUNDS; i++)
      if (!(await noble.verify(payload, signature))) throw new Error("noble")
  })

  console.log(`verify, cold (${COLD_TOKENS.toLocaleString("en-US")} distinct tokens)  ${cold}`)
  console.log(`verify, cached (same token)         ${cached}`)
  console.log(`Ed25519 check alone, node:crypto    ${nativeRate}`)
  console.log(`Ed25519 check alone, @noble/ed25519 ${nobleRate}`)
}
