/**
 * The few bytes of tar the script sandbox needs: files go into the sandbox and come out of it as
 * a tar stream (docs/skills-that-run.md#files-in-and-out), so the host never opens a path the
 * sandboxed script could have made into a link. Only regular files are written and read; every
 * other entry (a symbolic or hard link, a device, a FIFO) read back is skipped and counted, and a
 * name that is absolute or climbs with `..` is skipped too. The stream that comes back was
 * written inside the sandbox: it is untrusted input, parsed with every length checked.
 */

/** A file of the scratch directory: its path relative to it (`/`-separated) and its bytes. */
export interface ScratchFile {
  readonly path: string
  readonly data: Uint8Array
}

/** What `readTar` found: the regular files, and how many entries it left out and why. */
export interface TarContents {
  readonly files: ReadonlyArray<ScratchFile>
  /** Links, devices, FIFOs and entries with a name that leads out: not files of the scratch. */
  readonly skipped: ReadonlyArray<string>
  /** True when the stream ended inside an entry (the sandbox was stopped while writing it). */
  readonly truncated: boolean
}

const BLOCK = 512
const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: false })

/** The path as segments inside the scratch, or undefined when it is absolute, empty or climbs out. */
export const safeRelative = (path: string): string | undefined => {
  if (path.includes("\0") || path.startsWith("/")) return undefined
  const segments: string[] = []
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue
    if (segment === "..") return undefined
    segments.push(segment)
  }
  return segments.length === 0 ? undefined : segments.join("/")
}

const octal = (value: number, width: number): Uint8Array => {
  const text = `${value.toString(8).padStart(width - 1, "0")}\0`
  return encoder.encode(text)
}

const header = (path: string, size: number): Uint8Array => {
  const block = new Uint8Array(BLOCK)
  const bytes = encoder.encode(path)
  let name = bytes
  let prefix = new Uint8Array(0)
  if (bytes.length > 100) {
    // ustar splits a long name at a `/` into a prefix (155) and a name (100).
    const text = path
    let cut = -1
    for (let i = text.lastIndexOf("/"); i > 0; i = text.lastIndexOf("/", i - 1)) {
      if (encoder.encode(text.slice(0, i)).length <= 155 && encoder.encode(text.slice(i + 1)).length <= 100) {
        cut = i
        break
      }
    }
    if (cut < 0)
      throw new RangeError(`The path '${path.slice(0, 120)}…' is too long for the scratch directory.`)
    prefix = encoder.encode(text.slice(0, cut))
    name = encoder.encode(text.slice(cut + 1))
  }
  block.set(name, 0)
  block.set(octal(0o644, 8), 100)
  block.set(octal(0, 8), 108)
  block.set(octal(0, 8), 116)
  block.set(octal(size, 12), 124)
  block.set(octal(Math.floor(Date.now() / 1000), 12), 136) // zip refuses dates before 1980
  block.fill(0x20, 148, 156) // the checksum is summed with its own field as spaces
  block[156] = 0x30 // '0': a regular file
  block.set(encoder.encode("ustar\0"), 257)
  block.set(encoder.encode("00"), 263)
  block.set(prefix, 345)
  let sum = 0
  for (const b of block) sum += b
  block.set(encoder.encode(`${sum.toString(8).padStart(6, "0")}\0 `), 148)
  return block
}

/** A tar stream of `files` (regular files only, mode 0644), ended by two zero blocks. */
export const writeTar = (files: ReadonlyArray<ScratchFile>): Uint8Array => {
  const parts: Uint8Array[] = []
  let total = 0
  for (const file of files) {
    const path = safeRelative(file.path)
    if (path === undefined) throw new RangeError(`'${file.path}' is not a path inside the scratch directory.`)
    const h = header(path, file.data.length)
    const padded = Math.ceil(file.data.length / BLOCK) * BLOCK
    const body = new Uint8Array(padded)
    body.set(file.data)
    parts.push(h, body)
    total += h.length + padded
  }
  const out = new Uint8Array(total + 2 * BLOCK)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

const cString = (block: Uint8Array, start: number, length: number): string => {
  const slice = block.subarray(start, start + length)
  const end = slice.indexOf(0)
  return decoder.decode(end < 0 ? slice : slice.subarray(0, end))
}

const parseOctal = (block: Uint8Array, start: number, length: number): number | undefined => {
  const text = cString(block, start, length).trim()
  if (!/^[0-7]+$/.test(text)) return undefined // base-256 sizes (over 8 GiB) are never ours
  const value = Number.parseInt(text, 8)
  return Number.isSafeInteger(value) ? value : undefined
}

const checksumOk = (block: Uint8Array): boolean => {
  const stored = parseOctal(block, 148, 8)
  if (stored === undefined) return false
  let sum = 0
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!
  return sum === stored
}

/**
 * The regular files of a tar stream (ustar, and GNU tar's long names). Stops at the end marker,
 * at a block that is not a valid header, or at the end of the bytes.
 */
export const readTar = (bytes: Uint8Array): TarContents => {
  const files: ScratchFile[] = []
  const skipped: string[] = []
  let at = 0
  let longName: string | undefined
  while (at + BLOCK <= bytes.length) {
    const block = bytes.subarray(at, at + BLOCK)
    if (block.every((b) => b === 0)) return { files, skipped, truncated: false }
    if (!checksumOk(block))
      return { files, skipped: [...skipped, "(an entry that is not tar)"], truncated: true }
    const size = parseOctal(block, 124, 12)
    if (size === undefined)
      return { files, skipped: [...skipped, "(an entry of no readable size)"], truncated: true }
    const type = String.fromCharCode(block[156]!)
    const prefix = cString(block, 345, 155)
    const rawName =
      longName ?? (prefix === "" ? cString(block, 0, 100) : `${prefix}/${cString(block, 0, 100)}`)
    const dataStart = at + BLOCK
    const next = dataStart + Math.ceil(size / BLOCK) * BLOCK
    if (dataStart + size > bytes.length) return { files, skipped, truncated: true }
    const data = bytes.subarray(dataStart, dataStart + size)
    at = next
    if (type === "L") {
      longName = cString(data, 0, data.length)
      continue
    }
    longName = undefined
    if (type === "5") continue // a folder: its files carry their own paths
    const path = safeRelative(rawName)
    if (type !== "0" && type !== "\0") skipped.push(`${rawName} (not a regular file)`)
    else if (path === undefined) skipped.push(`${rawName} (a name outside the scratch directory)`)
    else files.push({ path, data: data.slice() })
  }
  return { files, skipped, truncated: true } // no end marker: the writer was cut off
}
