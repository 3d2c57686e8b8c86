/**
 * The authenticated cipher core's `TokenVault` seals connection records with: AES-256-GCM from
 * `node:crypto`, keyed by the operator's `CONNECTIONS_KEY` (docs/oauth.md#at-rest).
 *
 * A sealed text is `pbc1.` followed by base64url of a fresh 12-byte IV, the ciphertext and the
 * 16-byte tag. The seal's context (the vault passes the user and server) is the GCM additional
 * data: it is not stored, so a sealed text opens only under the context it was sealed under.
 * Opening refuses (returns undefined) a text of another format, another key, another context or
 * with any byte changed; it never throws on bad input.
 *
 * Rotation (docs/oauth.md#at-rest): the cipher seals with the current key and opens with the
 * current one, then each previous key (`CONNECTIONS_KEY_PREVIOUS`); `isStale` tells the vault a
 * record opened only with a previous key, which it then seals again under the current one.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import type { TokenVault } from "@plugboard/core"
import { Either } from "effect"

/** Bytes of a key: AES-256. */
export const KEY_BYTES = 32
/** The prefix of every text this cipher seals (the format's version). */
export const SEALED_PREFIX = "pbc1."

const IV_BYTES = 12
const TAG_BYTES = 16
const HEX_KEY = /^[0-9a-fA-F]{64}$/
const BASE64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/

/**
 * Reads a key as the operator writes it: 64 hex digits, or base64 / base64url of 32 bytes
 * (`openssl rand -base64 32`). The error names the variable and the rule, never the value: the
 * text is a secret.
 */
export const decodeKey = (text: string, variable = "CONNECTIONS_KEY"): Either.Either<Uint8Array, string> => {
  const trimmed = text.trim()
  const rule = `${variable} must be ${KEY_BYTES} random bytes written as 64 hex digits or as base64 (openssl rand -base64 32)`
  if (HEX_KEY.test(trimmed)) return Either.right(new Uint8Array(Buffer.from(trimmed, "hex")))
  if (BASE64_KEY.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64")
    if (bytes.length === KEY_BYTES) return Either.right(new Uint8Array(bytes))
  }
  return Either.left(`${rule}; the value set has ${trimmed.length} characters and is not such a key.`)
}

/**
 * The AES-256-GCM cipher under `key` (32 bytes; a caller's bug otherwise: `RangeError`). Each
 * seal draws a fresh random IV, so sealing the same text twice gives two different texts. A text
 * sealed under one of the `previous` keys opens too (and is stale: `isStale`).
 */
export const make = (key: Uint8Array, previous: ReadonlyArray<Uint8Array> = []): TokenVault.Cipher => {
  for (const k of [key, ...previous]) {
    if (!(k instanceof Uint8Array) || k.length !== KEY_BYTES) {
      throw new RangeError(`an AES-256-GCM key is ${KEY_BYTES} bytes, got ${describeKey(k)}`)
    }
  }
  const secret = Buffer.from(key)
  const older = previous.map((k) => Buffer.from(k))
  return {
    seal: (plaintext, context) => {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv("aes-256-gcm", secret, iv, { authTagLength: TAG_BYTES })
      cipher.setAAD(Buffer.from(context, "utf8"))
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return SEALED_PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url")
    },
    open: (sealed, context) => {
      const current = openWith(secret, sealed, context)
      if (current !== undefined) return current
      for (const k of older) {
        const opened = openWith(k, sealed, context)
        if (opened !== undefined) return opened
      }
      return undefined
    },
    isStale: (sealed, context) =>
      older.length > 0 &&
      openWith(secret, sealed, context) === undefined &&
      older.some((k) => openWith(k, sealed, context) !== undefined)
  }
}

const openWith = (secret: Buffer, sealed: string, context: string): string | undefined => {
  if (typeof sealed !== "string" || !sealed.startsWith(SEALED_PREFIX)) return undefined
  const encoded = sealed.slice(SEALED_PREFIX.length)
  if (!/^[A-Za-z0-9_-]*$/.test(encoded)) return undefined
  const bytes = Buffer.from(encoded, "base64url")
  if (bytes.length < IV_BYTES + TAG_BYTES) return undefined
  try {
    const decipher = createDecipheriv("aes-256-gcm", secret, bytes.subarray(0, IV_BYTES), {
      authTagLength: TAG_BYTES
    })
    decipher.setAAD(Buffer.from(String(context), "utf8"))
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
    const body = bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8")
  } catch {
    // A wrong key, context or byte fails GCM's tag check: not ours to open.
    return undefined
  }
}

/** The cipher from the key's text (`decodeKey`), or the message saying why the text is no key. */
export const fromKeyText = (
  text: string,
  variable = "CONNECTIONS_KEY"
): Either.Either<TokenVault.Cipher, string> => Either.map(decodeKey(text, variable), make)

/**
 * The cipher from the current key's text and, optionally, the previous keys' (comma-separated,
 * `CONNECTIONS_KEY_PREVIOUS`), or a message per text that is no key, naming the variable and the
 * key's position (1 = first), never a value.
 */
export const fromKeyTexts = (
  current: string,
  previous: string | undefined,
  variables: { readonly current: string; readonly previous: string } = {
    current: "CONNECTIONS_KEY",
    previous: "CONNECTIONS_KEY_PREVIOUS"
  }
): Either.Either<TokenVault.Cipher, ReadonlyArray<string>> => {
  const texts = previous === undefined ? [] : previous.split(",")
  const decoded = [
    decodeKey(current, variables.current),
    ...texts.map((t, i) => decodeKey(t, `${variables.previous} (key ${i + 1} of ${texts.length})`))
  ]
  const problems = decoded.flatMap((d) => (Either.isLeft(d) ? [d.left] : []))
  if (problems.length > 0) return Either.left(problems)
  const [key, ...older] = decoded.map((d) => Either.getOrThrow(d))
  return Either.right(make(key as Uint8Array, older))
}

const describeKey = (key: unknown): string =>
  key instanceof Uint8Array ? `${key.length} bytes` : `a ${typeof key}, not bytes`
