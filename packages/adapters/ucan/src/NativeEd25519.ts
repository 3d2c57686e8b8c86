/**
 * Ed25519 `did:key` verification on Node's OpenSSL instead of ucanto's pure-JS `@noble/ed25519`.
 * Same keys, same signatures, same answer (a property test compares the two), roughly 40x faster,
 * which is what makes a cold (uncached) auth check cheap enough to sit in front of every request.
 */
import { createPublicKey, verify as cryptoVerify, type KeyObject } from "node:crypto"
import type { API } from "@ucanto/core"
import { ed25519 } from "@ucanto/principal"

// DER SubjectPublicKeyInfo header for an Ed25519 key (RFC 8410); the 32 raw key bytes follow it.
const SPKI_ED25519_PREFIX = Uint8Array.from([
  0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00
])
const EDDSA = ed25519.Verifier.signatureCode

/** A ucanto `Verifier` for one Ed25519 `did:key`, backed by `node:crypto`. */
export interface NativeVerifier extends API.Verifier<API.DID, typeof EDDSA> {
  readonly publicKey: Uint8Array
}

const make = (did: API.DID, publicKey: Uint8Array, key: KeyObject): NativeVerifier => ({
  publicKey,
  did: () => did,
  toDIDKey: () => did as API.DIDKey,
  verify: (payload, signature) => signature.code === EDDSA && cryptoVerify(null, payload, key, signature.raw),
  withDID: (id) => make(id, publicKey, key) as never
})

/**
 * Parses an Ed25519 `did:key` into a verifier. Throws (like ucanto's own parser) when the DID is
 * not a did:key or names another key type.
 */
export const parse = (did: string): NativeVerifier => {
  // ucanto's parser validates the multibase, the multicodec tag and the key length.
  const reference = ed25519.Verifier.parse(did)
  // At run time ucanto's Ed25519 verifier exposes its raw key; its declared type does not.
  const publicKey = (reference as unknown as { readonly publicKey: Uint8Array }).publicKey
  const der = new Uint8Array(SPKI_ED25519_PREFIX.length + publicKey.length)
  der.set(SPKI_ED25519_PREFIX, 0)
  der.set(publicKey, SPKI_ED25519_PREFIX.length)
  const key = createPublicKey({ key: Buffer.from(der), format: "der", type: "spki" })
  return make(reference.did(), publicKey, key)
}

/** A ucanto `PrincipalParser` over {@link parse}, for `@ucanto/validator`'s `principal` option. */
export const Parser: API.PrincipalParser = { parse: parse as API.PrincipalParser["parse"] }
