/**
 * The one tool of a skill plugin: it reads a file of the skill's folder (`references/`,
 * `scripts/`, `assets/`) by relative path, as the Agent Skills format's progressive disclosure
 * wants: the body of `SKILL.md` comes with `load_capability`, the rest only when the model asks.
 *
 * The path comes from the model, so it is untrusted: it is resolved lexically inside the folder
 * (an absolute path or a `..` that climbs out is refused before the file system sees it), then
 * the real path is checked to still be inside the folder's real path (a symbolic link may point
 * anywhere), and only a regular file is opened (a FIFO would block the turn). Every refusal is an
 * error answer to the model, never a throw: the turn goes on and the model can correct itself.
 */
import { constants, type Stats } from "node:fs"
import { lstat, open, readdir, realpath, stat } from "node:fs/promises"
import { extname, join, sep } from "node:path"
import type { CatalogSource } from "@plugboard/core"
import { ToolOutput } from "@plugboard/core"

/** The source name of the tool; core namespaces it (`<skill>__read_file`) when skills share it. */
export const READ_FILE_TOOL = "read_file"

/** How many files the tool's description lists before "… and N more". */
const LISTED_FILES = 50
/** The walk of a folder stops after this many entries: a skill is not a `node_modules`. */
const WALK_LIMIT = 5_000
/** How deep the walk goes. */
const WALK_DEPTH = 8
/** Bytes looked at for a NUL, as git does, to tell a binary file. */
const SNIFF_BYTES = 8_192

/** The readable files of a skill folder (relative, `/`-separated, sorted), and whether the walk stopped early. */
export interface FolderListing {
  readonly files: ReadonlyArray<string>
  /** True when the walk stopped at its limit: more files may exist. */
  readonly truncated: boolean
}

const isHidden = (segment: string): boolean => segment.startsWith(".")

const isInside = (root: string, real: string): boolean => real === root || real.startsWith(root + sep)

/**
 * Every file of the folder the tool can read, except `SKILL.md` at its top (its body is already
 * the guide; it can still be read). Hidden entries are skipped (the tool refuses them); symbolic
 * links are listed when they resolve to a file inside the folder and never walked into, so a
 * link loop cannot hold the boot.
 */
export const listFolder = async (rootReal: string): Promise<FolderListing> => {
  const files: string[] = []
  let seen = 0
  let truncated = false
  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    let entries: ReadonlyArray<{
      name: string
      isDirectory(): boolean
      isFile(): boolean
      isSymbolicLink(): boolean
    }>
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch {
      return // an unreadable subfolder is left out of the list; reading in it says why
    }
    for (const entry of [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (isHidden(entry.name)) continue
      if (++seen > WALK_LIMIT) {
        truncated = true
        return
      }
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`
      if (entry.isDirectory()) {
        if (depth < WALK_DEPTH) await walk(join(dir, entry.name), path, depth + 1)
        else truncated = true
      } else if (entry.isFile()) {
        if (path !== "SKILL.md") files.push(path)
      } else if (entry.isSymbolicLink()) {
        try {
          const real = await realpath(join(dir, entry.name))
          if (isInside(rootReal, real) && (await stat(real)).isFile()) files.push(path)
        } catch {
          // a dangling link is not a readable file
        }
      }
    }
  }
  await walk(rootReal, "", 0)
  return { files, truncated }
}

/** The tool's description: what it does and which files there are. */
const describe = (skill: string, listing: FolderListing): string => {
  const shown = listing.files.slice(0, LISTED_FILES)
  const more = listing.files.length - shown.length
  const tail = `${more > 0 ? `, … and ${more} more` : ""}${listing.truncated ? " (the folder holds more files than were counted)" : ""}`
  const files = shown.length > 0 ? shown.join(", ") : "none near the top of the folder"
  return `Reads a file of the '${skill}' skill by its path relative to the skill's folder, when its instructions point to one. Files: ${files}${tail}.`
}

/** A short type for a binary file, by its extension: the model is told what it is, not its bytes. */
const MIME: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".pdf": "application/pdf",
  ".zip": "application/zip",
  ".gz": "application/gzip",
  ".tar": "application/x-tar",
  ".wasm": "application/wasm",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".mp3": "audio/mpeg",
  ".wav": "audio/wav",
  ".mp4": "video/mp4",
  ".sqlite": "application/vnd.sqlite3",
  ".db": "application/vnd.sqlite3",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
}

/** The model's path as quoted back to it: a path of thousands of characters is cut. */
const quoted = (path: string): string => `'${path.length > 200 ? `${path.slice(0, 200)}…` : path}'`

const bytes = (n: number): string => `${n.toLocaleString("en-US")} byte${n === 1 ? "" : "s"}`

/**
 * The path the model gave as `/`-separated segments inside the folder, or the refusal. `\` counts
 * as a separator too: a Windows-style path must not slip a `..` past a check that splits on `/`.
 */
export const resolveRelative = (
  path: string
): { readonly segments: ReadonlyArray<string> } | { readonly refusal: string } => {
  if (path.trim().length === 0)
    return { refusal: "The path is empty: give a file's path relative to the skill's folder." }
  if (path.includes("\0")) return { refusal: "The path holds a NUL character." }
  if (/^[\\/]/.test(path) || /^[A-Za-z]:/.test(path))
    return { refusal: `${quoted(path)} is an absolute path: give a path relative to the skill's folder.` }
  const segments: string[] = []
  for (const segment of path.split(/[\\/]+/)) {
    if (segment === "" || segment === ".") continue
    if (segment === "..") {
      if (segments.length === 0)
        return { refusal: `${quoted(path)} leads out of the skill's folder: only its own files can be read.` }
      segments.pop()
    } else segments.push(segment)
  }
  if (segments.length === 0)
    return { refusal: `${quoted(path)} is the skill's folder itself: give a file's path.` }
  if (segments.some(isHidden))
    return { refusal: `${quoted(path)} is a hidden file: hidden files of a skill are not read.` }
  return { segments }
}

/** Reads up to `max` bytes of a regular file already checked to be inside the folder. */
const readHead = async (
  real: string,
  max: number
): Promise<{ readonly head: Buffer; readonly size: number }> => {
  // O_NOFOLLOW: the path was resolved; a link put in its place since is not followed.
  // O_NONBLOCK: should it have become a FIFO since the check, opening it does not hang the turn.
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const info = await handle.stat()
    if (!info.isFile()) throw new Error("not a regular file")
    const buffer = Buffer.alloc(Math.min(info.size, max))
    let filled = 0
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled)
      if (bytesRead === 0) break
      filled += bytesRead
    }
    return { head: buffer.subarray(0, filled), size: Math.max(info.size, filled) }
  } finally {
    await handle.close()
  }
}

/** The longest prefix of `buffer` that does not cut a UTF-8 character in two. */
const utf8Prefix = (buffer: Buffer): Buffer => {
  let end = buffer.length
  // Back up over continuation bytes (10xxxxxx) to the start of the last character...
  let i = end - 1
  while (i >= 0 && end - i <= 4 && (buffer[i]! & 0xc0) === 0x80) i--
  if (i < 0) return buffer
  // ...and keep it only when all its bytes are there.
  const lead = buffer[i]!
  const width = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
  if (end - i < width) end = i
  return buffer.subarray(0, end)
}

const codeOf = (thrown: unknown): string | undefined =>
  typeof thrown === "object" && thrown !== null ? (thrown as { code?: string }).code : undefined

/** Options of `readSkillFile`. */
export interface ReadOptions {
  /** Most bytes of a file returned to the model. */
  readonly maxFileBytes: number
}

/**
 * Reads `path` (relative, from the model) in the skill folder whose real path is `rootReal`: the
 * text, cut at `maxFileBytes` with a note saying so; a binary file's size and type; or an error
 * answer saying why not.
 */
export const readSkillFile = async (
  rootReal: string,
  skill: string,
  path: unknown,
  options: ReadOptions
): Promise<ToolOutput.ToolOutput> => {
  if (typeof path !== "string")
    return ToolOutput.text(
      `read_file needs 'path', a string: a file's path relative to the '${skill}' skill's folder.`,
      true
    )
  const resolved = resolveRelative(path)
  if ("refusal" in resolved) return ToolOutput.text(resolved.refusal, true)
  const rel = resolved.segments.join("/")
  let real: string
  let info: Stats
  try {
    real = await realpath(join(rootReal, ...resolved.segments))
    info = await lstat(real)
  } catch (thrown) {
    const code = codeOf(thrown)
    return ToolOutput.text(
      code === "ENOENT" || code === "ENOTDIR"
        ? `The '${skill}' skill has no file '${rel}' (its files are listed in this tool's description).`
        : `'${rel}' could not be read (${code ?? String(thrown)}).`,
      true
    )
  }
  if (!isInside(rootReal, real))
    return ToolOutput.text(
      `'${rel}' is a link to outside the skill's folder: only its own files can be read.`,
      true
    )
  if (info.isDirectory()) {
    const inside = await listFolder(real).catch(() => ({ files: [], truncated: false }))
    const some = inside.files.slice(0, 10).map((f) => `${rel}/${f}`)
    return ToolOutput.text(
      `'${rel}' is a folder, not a file.${some.length > 0 ? ` Files in it: ${some.join(", ")}${inside.files.length > 10 ? ", …" : ""}.` : ""}`,
      true
    )
  }
  if (!info.isFile()) return ToolOutput.text(`'${rel}' is not a regular file.`, true)
  let head: Buffer
  let size: number
  try {
    // Enough bytes to sniff for binary content even when the cap is smaller than the sniff.
    ;({ head, size } = await readHead(real, Math.max(options.maxFileBytes, SNIFF_BYTES)))
  } catch (thrown) {
    return ToolOutput.text(`'${rel}' could not be read (${codeOf(thrown) ?? String(thrown)}).`, true)
  }
  if (head.subarray(0, SNIFF_BYTES).includes(0)) {
    const type = MIME[extname(rel).toLowerCase()] ?? "application/octet-stream"
    return ToolOutput.text(`'${rel}' is a binary file (${type}, ${bytes(size)}); its bytes are not shown.`)
  }
  if (size === 0) return ToolOutput.text(`'${rel}' is empty.`)
  if (size <= options.maxFileBytes) return ToolOutput.text(head.toString("utf8"))
  const shown = utf8Prefix(head.subarray(0, options.maxFileBytes))
  return ToolOutput.text(`${shown.toString("utf8")}\n\n[truncated: first ${shown.length} of ${size} bytes]`)
}

/**
 * The skill's `read_file` tool, or undefined when the folder holds nothing but `SKILL.md` (a
 * tool with nothing to read would only cost tokens in the offer).
 */
export const readFileTool = async (
  skill: string,
  rootReal: string,
  options: ReadOptions
): Promise<CatalogSource.SourceTool | undefined> => {
  const listing = await listFolder(rootReal)
  if (listing.files.length === 0 && !listing.truncated) return undefined
  return {
    name: READ_FILE_TOOL,
    description: describe(skill, listing),
    inputSchema: {
      type: "object",
      properties: {
        path: {
          type: "string",
          description: "The file's path relative to the skill's folder, e.g. 'references/guide.md'."
        }
      },
      required: ["path"],
      additionalProperties: false
    },
    call: (args) => readSkillFile(rootReal, skill, args.path, options)
  }
}
