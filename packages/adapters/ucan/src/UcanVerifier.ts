/**
 * Turns a request's UCAN credentials into the user's DID, the way QiForge oracles do:
 *
 * - `Authorization: Bearer <invocation>` with `X-Auth-Type: ucan` — the primary form; or
 * - `x-ucan-delegation: <delegation>` alone (the legacy form; `acceptBareDelegation`).
 *   When both are sent, the invocation authenticates and the delegation is left to whoever uses
 *   it downstream: it is authorisation material, not proof of who is calling.
 *
 * A token is accepted when its signature verifies against its issuer's Ed25519 `did:key`, it is
 * addressed to the oracle, it carries an expiry no more than `maxTtlSeconds` ahead and is inside
 * its time bounds, it carries `{ can: '*', with: resource }`, every proof embedded in it verifies
 * (signature, time bounds, each addressed to the one relying on it), and `@ucanto/validator`'s
 * `access` agrees. The issuer becomes the user. Accepted tokens are cached until they expire.
 *
 * The token's other capabilities are what the user is granted (docs/plugins.md#requiring-capabilities):
 * each one that `access` proves from a grant issuer (the oracle itself, and `rootIssuers`, unless
 * `grantIssuers` says otherwise) is carried to the turn as `Verified.capabilities`, where a
 * plugin's `requires` is checked (core's `Access`). A capability the user merely claims, signed by
 * nobody the oracle trusts, grants nothing; it does not fail the request either.
 */
import type { Auth } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { type API, Delegation, UCAN } from "@ucanto/core"
import { access, capability, ok, Schema } from "@ucanto/validator"
import { type Credentials, pickToken, truncate } from "./Credentials.js"
import * as NativeEd25519 from "./NativeEd25519.js"
import { isAuthError, refuse } from "./Refusal.js"
import * as Token from "./Token.js"
import { keyOf, type Verdict, VerdictCache } from "./VerdictCache.js"

/** Configuration of {@link makeUcanVerifier}. Give `oracleDid` or `oracleSigner` (or both, agreeing). */
export interface UcanVerifierOptions {
  /** The oracle's DID: the audience every token must be addressed to. */
  readonly oracleDid?: string
  /** The oracle's key; its DID is used as `oracleDid`. */
  readonly oracleSigner?: Token.Signer
  /** The resource of the required `*` capability; defaults to `ixo:oracle`. */
  readonly resource?: string
  /** Furthest a token's expiry may lie ahead of now, in seconds; defaults to 900 (15 minutes). */
  readonly maxTtlSeconds?: number
  /** Current time in epoch milliseconds; defaults to `Date.now`. */
  readonly clock?: () => number
  /** Accepted tokens kept (LRU); defaults to 10,000. 0 disables the cache. */
  readonly cacheSize?: number
  /**
   * DIDs allowed to issue the oracle capability themselves. Unset (the default, as in QiForge),
   * any `did:key` may; set, everybody else must present a chain of proofs from one of them.
   */
  readonly rootIssuers?: ReadonlyArray<string>
  /** Whether `x-ucan-delegation` alone authenticates; defaults to `true`. */
  readonly acceptBareDelegation?: boolean
  /** Longest token accepted, in base64 characters; defaults to 64 KiB. */
  readonly maxTokenLength?: number
  /**
   * DIDs whose delegations grant capabilities (what plugins `requires`). Defaults to the oracle's
   * own DID plus `rootIssuers`: a user holds a capability only when a chain of proofs leads to
   * one of them.
   */
  readonly grantIssuers?: ReadonlyArray<string>
}

/** An accepted request: who is calling, and until when that holds. */
export interface Verified {
  /** The user's DID: the issuer of the token. */
  readonly did: string
  /** Epoch milliseconds at which the token (its whole chain) expires. */
  readonly expiresAt: number
  /** Which header authenticated the request. */
  readonly via: "invocation" | "delegation"
  /** The capabilities the token proves from a grant issuer (`UcanVerifierOptions.grantIssuers`). */
  readonly capabilities: ReadonlyArray<{ readonly can: string; readonly with: string }>
  /** A digest of the token that authenticated (SHA-256, base64): what a replay guard remembers. */
  readonly tokenKey: string
}

/** Counters, for tests and metrics. */
export interface UcanVerifierStats {
  /** Full (uncached) verifications started. */
  readonly verifications: number
  /** Verifications answered from the cache (including cached tokens found expired). */
  readonly cacheHits: number
  /** Entries in the cache now. */
  readonly cached: number
}

/** A configured verifier; see {@link makeUcanVerifier}. */
export interface UcanVerifier {
  /** The DID tokens must be addressed to. */
  readonly oracleDid: string
  /** The resource of the required capability. */
  readonly resource: string
  /**
   * Verifies a request's credentials; rejects with a core `Auth.AuthError` and nothing else.
   * `now` (epoch ms) overrides the configured clock for this call.
   */
  readonly verify: (credentials: Credentials, now?: number) => Promise<Verified>
  /** Verifies one token (either header's form); rejects with a core `Auth.AuthError`. */
  readonly verifyToken: (token: string, now?: number) => Promise<Verdict>
  /** Counters since creation. */
  readonly stats: () => UcanVerifierStats
  /** Forgets every cached verdict. */
  readonly clearCache: () => void
}

const KEY_CACHE_SIZE = 4096

const iso = (unixSeconds: number): string => {
  const date = new Date(unixSeconds * 1000)
  return Number.isNaN(date.getTime()) ? String(unixSeconds) : date.toISOString()
}

/** Error class names of `@ucanto/validator` failures, mapped to the reason they mean here. */
const VALIDATOR_REASONS: Record<string, Auth.AuthErrorReason> = {
  InvalidSignature: "bad-signature",
  Expired: "expired",
  NotValidBefore: "not-yet-valid"
}

/** The most specific reason found in a (nested) ucanto validation failure. */
const reasonOfValidatorFailure = (failure: unknown): Auth.AuthErrorReason => {
  const seen = new Set<unknown>()
  const stack: Array<{ value: unknown; depth: number }> = [{ value: failure, depth: 0 }]
  while (stack.length > 0) {
    const next = stack.pop()
    if (next === undefined || next.depth > 8) continue
    const { value, depth } = next
    if (typeof value !== "object" || value === null || seen.has(value)) continue
    seen.add(value)
    const name = (value as { name?: unknown }).name
    if (typeof name === "string" && VALIDATOR_REASONS[name] !== undefined) return VALIDATOR_REASONS[name]
    const record = value as Record<string, unknown>
    for (const key of ["info", "cause", "invalidProofs", "failedProofs", "delegationErrors"]) {
      const child = record[key]
      if (Array.isArray(child)) for (const item of child) stack.push({ value: item, depth: depth + 1 })
      else if (child !== undefined) stack.push({ value: child, depth: depth + 1 })
    }
  }
  return "wrong-capability"
}

/**
 * Builds a verifier. Throws a `TypeError` at construction for a configuration that could never
 * accept anything (no oracle identity, a non-positive TTL, ...), so a host fails at boot.
 */
export const makeUcanVerifier = (options: UcanVerifierOptions): UcanVerifier => {
  const oracleDid = options.oracleSigner?.did() ?? options.oracleDid
  if (oracleDid === undefined || !oracleDid.startsWith("did:")) {
    throw new TypeError("makeUcanVerifier needs the oracle's identity: oracleDid (a DID) or oracleSigner.")
  }
  if (options.oracleDid !== undefined && options.oracleDid !== oracleDid) {
    throw new TypeError(`oracleDid ${options.oracleDid} is not the DID of oracleSigner (${oracleDid}).`)
  }
  const resource = options.resource ?? Token.DEFAULT_RESOURCE
  if (resource.length === 0) throw new TypeError("resource must not be empty.")
  const maxTtlSeconds = options.maxTtlSeconds ?? Token.DEFAULT_MAX_TTL_SECONDS
  if (!(Number.isFinite(maxTtlSeconds) && maxTtlSeconds > 0)) {
    throw new TypeError(`maxTtlSeconds must be a positive number of seconds, got ${maxTtlSeconds}.`)
  }
  const clock = options.clock ?? Date.now
  const maxTokenLength = options.maxTokenLength ?? Token.DEFAULT_MAX_TOKEN_LENGTH
  const acceptBareDelegation = options.acceptBareDelegation ?? true
  const rootIssuers = options.rootIssuers === undefined ? undefined : new Set(options.rootIssuers)
  const cache = new VerdictCache(options.cacheSize ?? 10_000)
  const inFlight = new Map<string, Promise<Verdict>>()
  let verifications = 0
  let cacheHits = 0

  // The capability `access` must find, parsed the ucanto way (exact `can`, exact resource).
  const OracleAccess = capability({
    can: "*",
    with: Schema.literal(resource) as unknown as Schema.Reader<API.Resource, API.Resource>
  })
  const authority: API.Verifier = oracleDid.startsWith("did:key:")
    ? NativeEd25519.parse(oracleDid)
    : // A non-key oracle DID only names the audience; nothing is ever verified against it.
      {
        did: () => oracleDid as API.DID,
        verify: () => false,
        toDIDKey: () => oracleDid as API.DIDKey,
        withDID: () => authority as never
      }
  const canIssue =
    rootIssuers === undefined
      ? () => true
      : (_capability: API.ParsedCapability, issuer: API.DID) => rootIssuers.has(issuer)
  const grantIssuers = new Set(options.grantIssuers ?? [oracleDid, ...(options.rootIssuers ?? [])])
  const canGrant = (_capability: API.ParsedCapability, issuer: API.DID) => grantIssuers.has(issuer)

  // Parsing a did:key into an OpenSSL key costs about as much as a signature check, and a user
  // sends many tokens: parsed keys are kept (bounded; cleared wholesale when full).
  const keys = new Map<string, NativeEd25519.NativeVerifier>()
  const keyOfDid = (did: string): NativeEd25519.NativeVerifier => {
    let verifier = keys.get(did)
    if (verifier === undefined) {
      verifier = NativeEd25519.parse(did)
      if (keys.size >= KEY_CACHE_SIZE) keys.clear()
      keys.set(did, verifier)
    }
    return verifier
  }

  // Signatures this verifier has checked itself, by the decoded signature object (one per decoded
  // UCAN, so one payload) and the DID it was checked against. ucanto's `access` re-checks the
  // token's signature; this lets it reuse the answer instead of paying for the check twice.
  const checked = new WeakMap<object, string>()
  const principal: API.PrincipalParser = {
    parse: (did) => {
      const verifier = keyOfDid(did)
      return {
        ...verifier,
        verify: (payload, signature) =>
          checked.get(signature) === did || verifier.verify(payload, signature as never)
      }
    }
  }

  const verifySignature = async (delegation: API.Delegation, what: string): Promise<void> => {
    const issuer = delegation.issuer.did()
    let verifier: NativeEd25519.NativeVerifier
    try {
      verifier = keyOfDid(issuer)
    } catch {
      throw refuse(
        "unsupported",
        `${what} is issued by ${truncate(issuer, 120)}, which is not an Ed25519 did:key; its signature cannot be verified.`
      )
    }
    let valid: boolean
    try {
      valid = await UCAN.verifySignature(delegation.data, verifier)
    } catch {
      valid = false
    }
    if (!valid)
      throw refuse("bad-signature", `The signature of ${what} does not verify against its issuer ${issuer}.`)
    checked.set(delegation.signature, issuer)
  }

  /** Refuses a delegation outside its time bounds, with ucanto's boundaries (expired at exp, too early up to nbf). */
  const checkTimeBounds = (delegation: API.Delegation, now: number, what: string): void => {
    if (delegation.expiration <= now) {
      throw refuse("expired", `${what} expired at ${iso(delegation.expiration)}.`)
    }
    const notBefore = delegation.notBefore
    if (notBefore !== undefined && now <= notBefore) {
      throw refuse("not-yet-valid", `${what} is not valid before ${iso(notBefore)}.`)
    }
  }

  /** Verifies every proof embedded under `delegation`; returns the earliest expiry among them. */
  const verifyProofs = async (delegation: API.Delegation, now: number): Promise<number> => {
    let earliest = Number.POSITIVE_INFINITY
    for (const proof of delegation.proofs) {
      if (!Delegation.isDelegation(proof)) {
        throw refuse("malformed", `The token refers to proof ${proof.toString()} without including it.`)
      }
      const what = `proof ${proof.cid.toString()}`
      const relyingParty = delegation.issuer.did()
      if (proof.audience.did() !== relyingParty) {
        throw refuse(
          "wrong-capability",
          `The proof chain is broken: ${what} is addressed to ${proof.audience.did()}, not to ${relyingParty} who relies on it.`
        )
      }
      await verifySignature(proof, what)
      checkTimeBounds(proof, now, what)
      earliest = Math.min(earliest, proof.expiration, await verifyProofs(proof, now))
    }
    return earliest
  }

  /** The full check of one token; the order makes the reason the most fundamental one. */
  const check = async (token: string, nowMillis: number): Promise<Verdict> => {
    const delegation = await Token.decode(token, maxTokenLength)
    const now = Math.floor(nowMillis / 1000)
    // A token whose signature fails says nothing reliable, so that is checked before its claims.
    await verifySignature(delegation, "the token")
    const audience = delegation.audience.did()
    if (audience !== oracleDid) {
      throw refuse(
        "wrong-audience",
        `The token is addressed to ${truncate(audience, 120)}, not to this oracle (${oracleDid}).`
      )
    }
    const expiration = delegation.expiration
    if (!Number.isFinite(expiration)) {
      throw refuse("no-expiry", `The token has no expiry; it must expire within ${maxTtlSeconds} seconds.`)
    }
    checkTimeBounds(delegation, now, "The token")
    if (expiration > now + maxTtlSeconds) {
      throw refuse(
        "expiry-too-far",
        `The token expires at ${iso(expiration)}, more than ${maxTtlSeconds} seconds from now; mint a shorter-lived one.`
      )
    }
    const capabilities = delegation.capabilities
    if (!capabilities.some((c) => c.can === "*" && c.with === resource)) {
      const carried = capabilities.map((c) => `{ can: '${c.can}', with: '${c.with}' }`).join(", ")
      throw refuse(
        "wrong-capability",
        truncate(
          `The token must carry { can: '*', with: '${resource}' }; it carries ${carried || "nothing"}.`
        )
      )
    }
    const proofsExpireAt = await verifyProofs(delegation, now)
    // ucanto's own validator has the last word on whether the capability is held.
    const authorized = await access(
      delegation as unknown as API.Invocation<API.Capability<"*", API.Resource, API.Caveats>>,
      {
        capability: OracleAccess,
        authority,
        principal,
        canIssue,
        validateAuthorization: () => ok({})
      }
    )
    if (authorized.error) {
      throw refuse(
        reasonOfValidatorFailure(authorized.error),
        truncate(`The token does not prove { can: '*', with: '${resource}' }: ${authorized.error.message}`)
      )
    }
    return {
      did: delegation.issuer.did(),
      expiresAt: Math.min(expiration, proofsExpireAt) * 1000,
      capabilities: await granted(delegation)
    }
  }

  /**
   * The token's capabilities that ucanto's `access` proves from a grant issuer, in token order.
   * The signatures were checked above (`principal` reuses those answers), so each costs a walk of
   * the chain, not a signature.
   */
  const granted = async (
    delegation: API.Delegation
  ): Promise<ReadonlyArray<{ readonly can: string; readonly with: string }>> => {
    const out: Array<{ can: string; with: string }> = []
    for (const c of delegation.capabilities) {
      if (typeof c.can !== "string" || typeof c.with !== "string") continue
      if (out.some((o) => o.can === c.can && o.with === c.with)) continue
      const claimed = capability({
        can: c.can as API.Ability,
        with: Schema.literal(c.with) as unknown as Schema.Reader<API.Resource, API.Resource>
      })
      const proven = await access(
        delegation as unknown as API.Invocation<API.Capability<API.Ability, API.Resource, API.Caveats>>,
        {
          capability: claimed,
          authority,
          principal,
          canIssue: canGrant,
          validateAuthorization: () => ok({})
        }
      )
      if (!proven.error) out.push({ can: c.can, with: c.with })
    }
    return out
  }

  const verifyToken = (token: string, now: number = clock()): Promise<Verdict> => {
    const key = keyOf(token)
    const hit = cache.get(key)
    if (hit !== undefined) {
      cacheHits++
      if (now >= hit.expiresAt) {
        cache.delete(key)
        return Promise.reject(
          refuse("expired", `The token expired at ${new Date(hit.expiresAt).toISOString()}.`)
        )
      }
      return Promise.resolve(hit)
    }
    // Concurrent requests with one token (a page firing several calls) share one verification.
    const pending = inFlight.get(key)
    if (pending !== undefined) return pending
    verifications++
    const verification = check(token, now)
      .then(
        (verdict) => {
          cache.set(key, verdict)
          return verdict
        },
        (cause: unknown) => {
          throw asAuthError(cause)
        }
      )
      .finally(() => inFlight.delete(key))
    inFlight.set(key, verification)
    return verification
  }

  const verify = async (credentials: Credentials, now: number = clock()): Promise<Verified> => {
    try {
      const { token, via } = pickToken(credentials, acceptBareDelegation)
      const verdict = await verifyToken(token, now)
      return {
        did: verdict.did,
        expiresAt: verdict.expiresAt,
        via,
        capabilities: verdict.capabilities,
        tokenKey: keyOf(token)
      }
    } catch (cause) {
      throw asAuthError(cause)
    }
  }

  return {
    oracleDid,
    resource,
    verify,
    verifyToken,
    stats: () => ({ verifications, cacheHits, cached: cache.size }),
    clearCache: () => cache.clear()
  }
}

/** Anything a check throws, as an AuthError: a bug or an odd input must still end in a 401. */
const asAuthError = (cause: unknown): Auth.AuthError =>
  isAuthError(cause)
    ? cause
    : refuse("malformed", truncate(`The UCAN token could not be checked: ${describe(cause)}`))
