/** Token crafting for the UCAN tests: the odd tokens a client could send, built with ucanto itself. */
import { encodeToken, type Signer } from "@plugboard/ucan"
import { type API, Delegation, invoke } from "@ucanto/core"

/** Credentials as the primary header pair carries them. */
export const bearer = (token: string) => ({ authorization: `Bearer ${token}`, authType: "ucan" })

/** Unix seconds now. */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/** An invocation of an arbitrary capability, with any expiry (Infinity = none). */
export const craftInvocation = async (options: {
  issuer: Signer
  audience: string
  can?: string
  with?: string
  expiration?: number
  notBefore?: number
  proofs?: API.Delegation[]
}): Promise<string> => {
  const invocation = invoke({
    issuer: options.issuer,
    audience: { did: () => options.audience as API.DID },
    capability: {
      can: (options.can ?? "*") as API.Ability,
      with: (options.with ?? "ixo:oracle") as API.Resource
    },
    expiration: options.expiration ?? nowSeconds() + 300,
    ...(options.notBefore === undefined ? {} : { notBefore: options.notBefore }),
    proofs: options.proofs ?? []
  })
  return encodeToken(await invocation.buildIPLDView())
}

const indexOf = (haystack: Uint8Array, needle: Uint8Array): number => {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer
    return i
  }
  return -1
}

/** The token with one bit of its (outermost) signature flipped; the CAR stays well-formed. */
export const flipSignatureBit = async (token: string): Promise<string> => {
  const bytes = new Uint8Array(Buffer.from(token, "base64"))
  const extracted = await Delegation.extract(bytes)
  if (extracted.error) throw extracted.error
  const signature = extracted.ok.signature
  const at = indexOf(bytes, signature)
  if (at < 0) throw new Error("signature not found in the archive")
  const tampered = Uint8Array.from(bytes)
  const last = at + signature.length - 1
  tampered[last] = (tampered[last] ?? 0) ^ 0x01
  return Buffer.from(tampered).toString("base64")
}

/** The token with every occurrence of `from` replaced by `to` (same length) in its bytes. */
export const replaceBytes = (token: string, from: string, to: string): string => {
  if (from.length !== to.length) throw new Error("replacement must keep the length")
  const bytes = Buffer.from(token, "base64")
  const needle = Buffer.from(from)
  let at = bytes.indexOf(needle)
  if (at < 0) throw new Error(`'${from}' not found in the token`)
  while (at >= 0) {
    Buffer.from(to).copy(bytes, at)
    at = bytes.indexOf(needle, at + 1)
  }
  return bytes.toString("base64")
}
