/**
 * Stand-ins for `plugboard init`'s packages, so its tests need no `pnpm build`: tarballs shaped
 * like those of scripts/pack.sh (a gzipped tar, `package/package.json`) holding the workspace's own
 * manifests with `workspace:*` replaced by the version, and a checkout of a few tiny packages that
 * its real scripts/pack.sh packs.
 */
import { execFileSync } from "node:child_process"
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ROOT } from "./runCli.js"

/** The workspace's package folders scripts/pack.sh packs, relative to the root. */
const packageDirs = (): Array<string> => [
  "packages/core",
  ...readdirSync(join(ROOT, "packages/adapters"))
    .filter((d) => existsSync(join(ROOT, "packages/adapters", d, "package.json")))
    .map((d) => `packages/adapters/${d}`),
  "packages/host-node"
]

type Manifest = Record<string, unknown> & { name: string; version: string }

/** The workspace's manifests as `pnpm pack` writes them: `workspace:*` → the package's version. */
export const packedManifests = (): Array<Manifest> => {
  const manifests = packageDirs().map(
    (d) => JSON.parse(readFileSync(join(ROOT, d, "package.json"), "utf8")) as Manifest
  )
  const versions = new Map(manifests.map((m) => [m.name, m.version]))
  for (const m of manifests) {
    for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
      const deps = m[field] as Record<string, string> | undefined
      for (const [name, spec] of Object.entries(deps ?? {}))
        if (spec.startsWith("workspace:")) deps![name] = versions.get(name)!
    }
  }
  return manifests
}

/** Writes `manifest` as the npm tarball `<dir>/<file>`, its package.json alone. */
export const writeTarball = (dir: string, file: string, manifest: object): void => {
  const staging = mkdtempSync(join(tmpdir(), "plugboard-tarball-"))
  mkdirSync(join(staging, "package"))
  writeFileSync(join(staging, "package/package.json"), JSON.stringify(manifest))
  execFileSync("tar", ["czf", join(dir, file), "-C", staging, "package"])
  rmSync(staging, { recursive: true, force: true })
}

/** The tarball file name `pnpm pack` gives a package: `@plugboard/core` 0.1.0 → `plugboard-core-0.1.0.tgz`. */
export const tarballName = (name: string, version: string): string =>
  `${name.replace(/^@/, "").replace("/", "-")}-${version}.tgz`

/** A folder of stand-in tarballs of every workspace package but those of `leaveOut`. */
export const workspaceTarballs = (dir: string, leaveOut: ReadonlyArray<string> = []): string => {
  mkdirSync(dir, { recursive: true })
  for (const m of packedManifests())
    if (!leaveOut.includes(m.name)) writeTarball(dir, tarballName(m.name, m.version), m)
  return dir
}

/**
 * A checkout of core, host-node, langgraph and models at the workspace's versions (host-node
 * depending on the other three), each with a `dist/index.js` when `built`, and a copy of the
 * repository's scripts/pack.sh.
 */
export const fakeCheckout = (dir: string, built: boolean): string => {
  const versions = new Map(packedManifests().map((m) => [m.name, m.version]))
  mkdirSync(join(dir, "scripts"), { recursive: true })
  copyFileSync(join(ROOT, "scripts/pack.sh"), join(dir, "scripts/pack.sh"))
  writeFileSync(join(dir, "pnpm-workspace.yaml"), "packages:\n  - packages/*\n  - packages/adapters/*\n")
  const at = (name: string) => versions.get(name)!
  const packages = {
    "packages/core": { name: "@plugboard/core" },
    "packages/adapters/langgraph": {
      name: "@plugboard/langgraph",
      dependencies: { "@plugboard/core": at("@plugboard/core") }
    },
    "packages/adapters/models": { name: "@plugboard/models" },
    "packages/host-node": {
      name: "@plugboard/host-node",
      dependencies: Object.fromEntries(
        ["@plugboard/core", "@plugboard/langgraph", "@plugboard/models"].map((n) => [n, at(n)])
      )
    }
  }
  for (const [sub, manifest] of Object.entries(packages)) {
    mkdirSync(join(dir, sub, "dist"), { recursive: true })
    const full = {
      ...manifest,
      version: at(manifest.name),
      exports: { ".": { import: "./dist/index.js" } },
      files: ["dist"]
    }
    writeFileSync(join(dir, sub, "package.json"), JSON.stringify(full))
    if (built) writeFileSync(join(dir, sub, "dist/index.js"), "export {}\n")
  }
  return dir
}
