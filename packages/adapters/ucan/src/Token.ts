/**
 * The wire form of a UCAN as QiForge clients send it: ucanto's `archive()` of the delegation or
 * invocation (a CAR whose root is the `{ "ucan@0.9.1": <link> }` variant block), in standard
 * base64. Minting lives here too, so `plugboard token` and the tests speak exactly what the
 * verifier reads.
 */
import { randomBytes } from "node:crypto"
import { describe } from "@plugboard/core"
import { type API, Delegation, delegate, invoke } from "@ucanto/core"
import type { ed25519 } from "@ucanto/principal"
import { refuse } from "./Refusal.js"

/** An Ed25519 signer (a user's or the oracle's key). */
export type Signer = ed25519.Signer.EdSigner

/** The capability an oracle auth token carries: everything on the oracle resource. */
export const DEFAULT_RESOURCE = "ixo:oracle"
/** The longest lifetime the verifier accepts by default (15 minutes). */
export const DEFAULT_MAX_TTL_SECONDS = 900
/** Refuse tokens longer than this (base64 characters) before decoding them: a cheap bound on work. */
export const DEFAULT_MAX_TOKEN_LENGTH = 64 * 1024

// Standard and URL-safe base64, optional padding. Buffer's decoder silently skips other
// characters, so the shape is checked first: garbage must be refused, not half-decoded.
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/

/** base64 of a ucanto archive (CAR) of `delegation`: the token as it travels in a header. */
export const encode = async (delegation: API.Delegation): Promise<string> => {
  const archived = await delegation.archive()
  if (archived.error) throw archived.error
  return Buffer.from(archived.ok).toString("base64")
}

/**
 * Decodes a token into a ucanto delegation (an invocation is one). Rejects with a `malformed`
 * UcanAuthError when the text is not base64, not a CAR, or not a UCAN archive; fields are read
 * once here so that a lazily decoded block cannot fail later, mid-verification.
 */
export const decode = async (
  token: string,
  maxLength: number = DEFAULT_MAX_TOKEN_LENGTH
): Promise<API.Delegation> => {
  if (token.length === 0) throw refuse("malformed", "The UCAN token is empty.")
  if (token.length > maxLength) {
    throw refuse("malformed", `The UCAN token is ${token.length} characters long; the limit is ${maxLength}.`)
  }
  if (!BASE64.test(token)) {
    throw refuse("malformed", "The UCAN token is not base64 (expected base64 of a ucanto CAR archive).")
  }
  const bytes = new Uint8Array(Buffer.from(token, "base64"))
  let extracted: Awaited<ReturnType<typeof Delegation.extract>>
  try {
    extracted = await Delegation.extract(bytes)
  } catch (cause) {
    throw refuse("malformed", `The UCAN token is not a ucanto CAR archive: ${describe(cause)}`)
  }
  if (extracted.error) {
    throw refuse("malformed", `The UCAN token is not a ucanto CAR archive: ${describe(extracted.error)}`)
  }
  const delegation = extracted.ok
  try {
    touch(delegation, 0)
  } catch (cause) {
    throw refuse("malformed", `The UCAN token does not decode as a UCAN: ${describe(cause)}`)
  }
  return delegation
}

// A chain deeper than this is refused as malformed; real chains are one to three links long.
const MAX_DEPTH = 16

const touch = (delegation: API.Delegation, depth: number): void => {
  if (depth > MAX_DEPTH) throw new Error(`proof chain deeper than ${MAX_DEPTH}`)
  delegation.issuer.did()
  delegation.audience.did()
  void delegation.capabilities.length
  void delegation.expiration
  void delegation.notBefore
  void delegation.signature
  for (const proof of delegation.proofs) {
    if (Delegation.isDelegation(proof)) touch(proof, depth + 1)
  }
}

/** Options for {@link mintInvocation} and {@link mintDelegation}. */
export interface MintOptions {
  /** Who signs, and so who the oracle will take the user to be. */
  readonly issuer: Signer
  /** The oracle's DID (the token's audience). */
  readonly audience: string
  /** The resource the `*` capability is on; defaults to `ixo:oracle`. */
  readonly resource?: string
  /** Lifetime from `now`, in seconds; defaults to 300. The oracle accepts at most 900 by default. */
  readonly ttlSeconds?: number
  /** Not valid before, as Unix seconds. */
  readonly notBefore?: number
  /** Proofs (delegations) to embed, for an invoker that holds its authority from someone else. */
  readonly proofs?: ReadonlyArray<API.Delegation>
  /**
   * More capabilities to carry after the `*` one: those a plugin `requires` (README "Requiring
   * capabilities"); the oracle grants one only when `proofs` prove it from an authority it trusts.
   */
  readonly capabilities?: ReadonlyArray<{ readonly can: string; readonly with: string }>
  /** Leave out the `{ can: '*', with: resource }` capability (a delegation of `capabilities` only). */
  readonly withoutOracleCapability?: boolean
  /** The current time in epoch milliseconds; defaults to `Date.now()`. */
  readonly now?: number
  /**
   * The token's nonce; defaults to a random one, so that two tokens minted alike (same issuer,
   * audience and second) are never the same token: an oracle that takes each token once
   * (`UCAN_REPLAY=once`) would refuse the second as a replay.
   */
  readonly nonce?: string
}

const audienceOf = (did: string): API.Principal => {
  if (!did.startsWith("did:")) throw new TypeError(`audience must be a DID, got '${did}'`)
  return { did: () => did as API.DID }
}

const capabilitiesOf = (options: MintOptions): [API.Capability, ...Array<API.Capability>] => {
  const extra = (options.capabilities ?? []).map((c) => ({ can: c.can, with: c.with }) as API.Capability)
  const all =
    options.withoutOracleCapability === true
      ? extra
      : [
          { can: "*", with: (options.resource ?? DEFAULT_RESOURCE) as API.Resource } as API.Capability,
          ...extra
        ]
  if (all.length === 0) throw new TypeError("a token needs at least one capability")
  return all as [API.Capability, ...Array<API.Capability>]
}

const nonceOf = (options: MintOptions): string => options.nonce ?? randomBytes(9).toString("base64url")

const expirationOf = (options: MintOptions): number =>
  Math.floor((options.now ?? Date.now()) / 1000) + (options.ttlSeconds ?? 300)

/**
 * Mints the `Authorization: Bearer <it>` token: an invocation of `{ can: '*', with: resource }`
 * by `issuer`, addressed to the oracle, expiring `ttlSeconds` from now; returns its base64 form.
 */
export const mintInvocation = async (options: MintOptions): Promise<string> => {
  const capabilities = capabilitiesOf(options)
  // ucanto's `invoke` carries one capability; an invocation of several is built as a delegation.
  if (capabilities.length > 1) return encode(await mintDelegation(options))
  const invocation = invoke({
    issuer: options.issuer,
    audience: audienceOf(options.audience),
    capability: capabilities[0],
    expiration: expirationOf(options),
    ...(options.notBefore === undefined ? {} : { notBefore: options.notBefore }),
    nonce: nonceOf(options),
    proofs: [...(options.proofs ?? [])]
  })
  return encode(await invocation.buildIPLDView())
}

/**
 * Mints a delegation of `{ can: '*', with: resource }` (and `capabilities`) from `issuer` to `audience`, as a ucanto
 * delegation (embed it in {@link MintOptions.proofs}, or {@link encode} it for `x-ucan-delegation`).
 * `ttlSeconds: Infinity` makes one that never expires.
 */
export const mintDelegation = (options: MintOptions): Promise<API.Delegation> =>
  delegate({
    issuer: options.issuer,
    audience: audienceOf(options.audience),
    capabilities: capabilitiesOf(options),
    expiration: options.ttlSeconds === Infinity ? Infinity : expirationOf(options),
    ...(options.notBefore === undefined ? {} : { notBefore: options.notBefore }),
    nonce: nonceOf(options),
    proofs: [...(options.proofs ?? [])]
  })
