/**
 * The @plugboard packages a scaffold installs from tarballs, since they are not on the npm
 * registry (docs/cli.md#the-scaffolds-plugboard-packages): read from a folder of tarballs
 * (`plugboard init --from DIR`) or packed from the checkout the host runs from (its
 * `scripts/pack.sh`), then the ones the project needs, transitively, copied into its `vendor/`.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { gunzipSync } from "node:zlib"
import { InitError } from "./InitError.js"

/** The project's folder the tarballs are copied into; package.json names them `file:vendor/<tarball>`. */
export const VENDOR_DIR = "vendor"

/** A packed package: its tarball and what its package.json says. */
export interface Tarball {
  /** The tarball's path. */
  readonly file: string
  readonly name: string
  readonly version: string
  /** The @plugboard packages npm installs beside it: name → version spec. */
  readonly needs: Readonly<Record<string, string>>
}

const text = (block: Uint8Array, from: number, to: number) =>
  Buffer.from(block.subarray(from, to))
    .toString("utf8")
    .replace(/\0[\s\S]*$/, "")

/**
 * The `<folder>/package.json` of an npm tarball (a gzipped tar whose entries sit under one folder,
 * `package/` as npm and pnpm pack), or undefined when it has none or is not a gzipped tar.
 */
export const packedManifest = (tgz: Uint8Array): Record<string, unknown> | undefined => {
  let tar: Buffer
  try {
    tar = gunzipSync(tgz)
  } catch {
    return undefined
  }
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512)
    if (header.every((b) => b === 0)) return undefined
    // POSIX ustar keeps a long path's head in `prefix`; other formats use those bytes otherwise.
    const prefix = text(header, 257, 263) === "ustar" ? text(header, 345, 500) : ""
    const path = prefix === "" ? text(header, 0, 100) : `${prefix}/${text(header, 0, 100)}`
    const size = Number.parseInt(text(header, 124, 136).trim() || "0", 8)
    if (!Number.isSafeInteger(size)) return undefined
    const body = at + 512
    const regularFile = header[156] === 0 || header[156] === 0x30 // a pax or long-name header is not
    if (regularFile && /^[^/]+\/package\.json$/.test(path)) {
      try {
        return JSON.parse(tar.subarray(body, body + size).toString("utf8"))
      } catch {
        return undefined
      }
    }
    at = body + Math.ceil(size / 512) * 512
  }
  return undefined
}

/** The @plugboard packages a manifest makes npm install: dependencies, optional ones, peers not marked optional. */
const needsOf = (manifest: Record<string, unknown>): Record<string, string> => {
  const field = (key: string) => (manifest[key] ?? {}) as Record<string, string>
  const optionalPeers = field("peerDependenciesMeta") as unknown as Record<string, { optional?: boolean }>
  const peers = Object.entries(field("peerDependencies")).filter(([n]) => optionalPeers[n]?.optional !== true)
  return Object.fromEntries(
    [
      ...Object.entries(field("dependencies")),
      ...Object.entries(field("optionalDependencies")),
      ...peers
    ].filter(([name]) => name.startsWith("@plugboard/"))
  )
}

/** The npm tarballs (`*.tgz`) of `dir`, each read for its name, version and needs; any other file is left out. */
export const tarballsIn = (dir: string): Array<Tarball> =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".tgz"))
    .sort()
    .flatMap((f) => {
      const file = join(dir, f)
      const manifest = statSync(file).isFile() ? packedManifest(readFileSync(file)) : undefined
      if (typeof manifest?.name !== "string" || typeof manifest.version !== "string") return []
      return [{ file, name: manifest.name, version: manifest.version, needs: needsOf(manifest) }]
    })

const EXACT = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/

/**
 * The tarballs a project depending on `wanted` (name → exact version) installs: those, and every
 * @plugboard package they need, transitively. A need asked at an exact version takes that
 * version; at a range, the one tarball of that name. `InitError` ("no-tarballs") names every
 * package `available` lacks.
 */
export const neededTarballs = (
  available: ReadonlyArray<Tarball>,
  wanted: Readonly<Record<string, string>>,
  shownAs: string
): Array<Tarball> => {
  const picked = new Map<string, Tarball>()
  const seen = new Set<string>()
  const missing: Array<string> = []
  const queue = Object.entries(wanted).map(([name, spec]) => ({
    name,
    spec,
    by: undefined as string | undefined
  }))
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const { name, spec, by } = next
    if (seen.has(name)) continue
    seen.add(name)
    const named = available.filter((t) => t.name === name)
    const found = EXACT.test(spec)
      ? named.find((t) => t.version === spec)
      : named.length === 1
        ? named[0]
        : undefined
    if (found === undefined) {
      const notes = [
        ...(by === undefined ? [] : [`needed by ${by}`]),
        ...(named.length === 0 ? [] : [`only ${named.map((t) => t.version).join(", ")} there`])
      ]
      missing.push(`${name} ${spec}${notes.length === 0 ? "" : ` (${notes.join("; ")})`}`)
      continue
    }
    picked.set(name, found)
    for (const [need, needSpec] of Object.entries(found.needs))
      queue.push({ name: need, spec: needSpec, by: name })
  }
  if (missing.length > 0) {
    throw new InitError(
      "no-tarballs",
      `Cannot scaffold: '${shownAs}' has no tarball of ${missing.join(", ")}. --from takes a folder of ` +
        "the packages' tarballs, as `bash scripts/pack.sh <folder>` packs them in a plugboard checkout " +
        "(after `pnpm build`); or run plugboard init from that checkout, which packs them itself."
    )
  }
  return [...picked.values()].sort((a, b) => a.name.localeCompare(b.name))
}

/** The tarballs of the folder `--from` names, relative to `cwd`; `InitError` when it is not a folder. */
export const tarballsFrom = (cwd: string, from: string): Array<Tarball> => {
  const dir = resolve(cwd, from)
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new InitError(
      "no-tarballs",
      `Cannot scaffold: --from '${from}' is not a folder. It names a folder of the @plugboard packages' ` +
        "tarballs, as `bash scripts/pack.sh <folder>` packs them in a plugboard checkout."
    )
  }
  return tarballsIn(dir)
}

/**
 * The root of the plugboard checkout whose `packages/host-node` is `packageRoot`, or undefined
 * when the host was installed as a package (then there is nothing to pack).
 */
export const checkoutRoot = (packageRoot: string): string | undefined => {
  const root = join(packageRoot, "..", "..")
  const isCheckout = ["pnpm-workspace.yaml", "scripts/pack.sh", "packages/host-node/package.json"].every(
    (f) => existsSync(join(root, f))
  )
  return isCheckout ? root : undefined
}

/**
 * Packs the checkout at `root` with its `scripts/pack.sh` into a new temporary folder, which the
 * caller removes. `InitError` ("pack-failed") with pack.sh's own words when it refuses (packages
 * not built: it names the command to run) or fails.
 */
export const packCheckout = (root: string): string => {
  const dest = mkdtempSync(join(tmpdir(), "plugboard-init-"))
  const run = spawnSync("bash", [join(root, "scripts", "pack.sh"), dest], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"]
  })
  if (run.status === 0) return dest
  rmSync(dest, { recursive: true, force: true })
  const why = (run.stderr ?? "").trim() || (run.error?.message ?? `scripts/pack.sh exited with ${run.status}`)
  throw new InitError(
    "pack-failed",
    `Cannot scaffold: plugboard init from a checkout packs its @plugboard packages for the project ` +
      `(scripts/pack.sh), and packing failed; nothing was written:\n${why}`
  )
}
