/**
 * Ed25519 keys as text, so a host can keep the oracle's key and a local user's key in files
 * (`./.plugboard/` in the embedded default). The text is ucanto's `Signer.format` (multibase
 * base64, `M…`), the same form QiForge tooling stores private keys in.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises"
import { dirname } from "node:path"
import { describe } from "@plugboard/core"
import { ed25519 } from "@ucanto/principal"
import type { Signer } from "./Token.js"

/** A fresh random Ed25519 signer. */
export const generateSigner = (): Promise<Signer> => ed25519.Signer.generate()

/** The signer's private key as text (`M…`). Secret: whoever holds it can act as this DID. */
export const formatSigner = (signer: Signer): string => ed25519.Signer.format(signer)

/** Parses text made by {@link formatSigner}; throws a message naming what is wrong. */
export const parseSigner = (text: string): Signer => {
  try {
    return ed25519.Signer.parse(text.trim())
  } catch (cause) {
    throw new Error(
      `Not an Ed25519 private key in ucanto format (expected 'M…' multibase base64): ${describe(cause)}`
    )
  }
}

/**
 * Reads the signer kept at `path`, or creates one there (owner-only permissions) when the file
 * does not exist. A file that exists but does not parse is an error, never overwritten: a key
 * must not be silently replaced, or every token and delegation made for it stops working.
 */
export const loadOrCreateSigner = async (
  path: string
): Promise<{ readonly signer: Signer; readonly created: boolean }> => {
  let text: string | undefined
  try {
    text = await readFile(path, "utf8")
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== "ENOENT") throw cause
  }
  if (text !== undefined) {
    try {
      return { signer: parseSigner(text), created: false }
    } catch (cause) {
      throw new Error(`The key file ${path} is corrupt: ${(cause as Error).message}`)
    }
  }
  const signer = await generateSigner()
  await mkdir(dirname(path), { recursive: true })
  // `wx`: if another process created the file meanwhile, fail rather than clobber its key.
  try {
    await writeFile(path, `${formatSigner(signer)}\n`, { mode: 0o600, flag: "wx" })
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "EEXIST") return loadOrCreateSigner(path)
    throw cause
  }
  return { signer, created: true }
}
