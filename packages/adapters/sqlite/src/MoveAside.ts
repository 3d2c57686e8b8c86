/**
 * Moving a database file out of the way without losing a byte. A bad file (damaged, another
 * owner's) and a local copy that a restore replaces both go to `<file>.<label>-<time>` (`-2`,
 * `-3`… when that name is taken), together with every file that belongs to it; nothing is
 * overwritten, nothing is deleted.
 */
import { existsSync, linkSync, renameSync, unlinkSync } from "node:fs"

/** The side files SQLite keeps next to a database (they are replayed into whatever file has the name). */
export const SIDE_FILES = ["-wal", "-shm", "-journal"] as const

/**
 * The record a replication keeps next to a database of which remote snapshot the file's content
 * descends from (the Matrix sync's ledger, `<db>.matrix-sync.json`).
 */
export const SYNC_RECORD_SUFFIX = ".matrix-sync.json"

/**
 * Every file that describes one database file's content and so must move with it. The sync record
 * is one of them: left behind, a fresh database would inherit a claim to the room's snapshot and
 * its near-empty content would be uploaded over it.
 */
export const COMPANION_SUFFIXES: ReadonlyArray<string> = [...SIDE_FILES, SYNC_RECORD_SUFFIX]

/** Why a file is moved aside; part of its new name. */
export type MoveAsideLabel = "corrupt" | "conflict"

/**
 * Moves `filename` and its companions to `<filename>.<label>-<ISO time>[-n]`, choosing a name that
 * neither the file nor any companion already uses. Returns the new path of the main file, or
 * `undefined` when there was no file to move.
 */
export const moveAside = (
  filename: string,
  label: MoveAsideLabel,
  now: Date | number = new Date()
): string | undefined => {
  if (!existsSync(filename)) return undefined
  const stamp = new Date(now).toISOString().replace(/[:.]/g, "-")
  const base = `${filename}.${label}-${stamp}`
  for (let n = 1; n <= 1000; n++) {
    const target = n === 1 ? base : `${base}-${n}`
    if ([target, ...COMPANION_SUFFIXES.map((s) => target + s)].some((p) => existsSync(p))) continue
    moveNoClobber(filename, target)
    for (const suffix of COMPANION_SUFFIXES) {
      if (existsSync(filename + suffix)) moveNoClobber(filename + suffix, target + suffix)
    }
    return target
  }
  throw new Error(`cannot find a free name to move ${filename} aside`)
}

/** link + unlink, which fails with EEXIST rather than replace a file that appeared meanwhile. */
const moveNoClobber = (from: string, to: string) => {
  try {
    linkSync(from, to)
    unlinkSync(from)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === "EEXIST") throw error
    // No hard links here (a directory, some file systems): a rename after the existence check.
    if (existsSync(to)) throw error
    renameSync(from, to)
  }
}
