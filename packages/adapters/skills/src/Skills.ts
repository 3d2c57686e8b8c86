/**
 * An Agent Skills folder as derived plugin specs: every immediate subfolder holding a `SKILL.md`
 * is one skill, one on-demand plugin (docs/mounting.md). What a skill's front matter makes of a
 * manifest, how `metadata.plugboard` overrides it, and what its `read_file` tool is renamed to
 * when several skills have one are core's rules (`CatalogSource`); this module reads folders.
 *
 * A malformed skill never hides the others: `loadSkills` returns every good spec and every
 * error, and the host decides that errors abort boot (each becomes a `[boot-error]`).
 */
import type { Dirent, Stats } from "node:fs"
import { readdir, readFile, realpath, stat } from "node:fs/promises"
import { join, resolve } from "node:path"
import { CatalogSource, describe } from "@plugboard/core"
import { readFileTool } from "./ReadFile.js"
import { RUN_SCRIPT_TOOL, runScriptTool, type ScriptRunner } from "./RunScript.js"
import { parseSkillFile } from "./SkillFile.js"

/** The file that makes a folder a skill. */
export const SKILL_FILE = "SKILL.md"

/** Default of `maxFileBytes`: 64 KiB, about 16,000 tokens of text in one tool answer. */
export const DEFAULT_MAX_FILE_BYTES = 64 * 1024

/**
 * Default of `maxGuideBytes`. The Agent Skills format advises a body under 5,000 tokens (about
 * 20 KB); twice that and more is allowed, but a runaway file must not enter every load's answer.
 */
export const DEFAULT_MAX_GUIDE_BYTES = 64 * 1024

/** Bytes a front matter may add to a `SKILL.md` beyond its body before the file is not read. */
const FRONT_MATTER_BYTES = 16 * 1024

/** Folders read at once: enough to hide latency, few enough that thousands never hit EMFILE. */
const CONCURRENCY = 16

/** Options of `loadSkills`. */
export interface LoadSkillsOptions {
  /** Most bytes of a file the `read_file` tool returns (default 64 KiB); the rest is cut with a note. */
  readonly maxFileBytes?: number | undefined
  /** Most bytes of a skill's body, its operating guide (default 64 KiB); a bigger one is an error. */
  readonly maxGuideBytes?: number | undefined
  /**
   * Lets skills run their scripts (docs/skills-that-run.md): each named skill (or every skill,
   * `"all"`) whose folder has `scripts/` gets a `run_script` tool that runs them in `runner`'s
   * sandbox. Absent: no skill runs anything (the default).
   */
  readonly run?: { readonly runner: ScriptRunner; readonly skills: "all" | ReadonlyArray<string> } | undefined
}

/** What `loadSkills` found: the good skills, and what the operator should read. */
export interface LoadedSkills {
  /** One spec per well-formed skill (by folder name, skills folder after skills folder); for `CatalogSource.toPlugins`. */
  readonly specs: ReadonlyArray<CatalogSource.DerivedPluginSpec>
  /** Hard problems, each a sentence naming the file: the host aborts boot on any. */
  readonly errors: ReadonlyArray<string>
  /** Soft ones (an unknown front matter key, an empty body). */
  readonly warnings: ReadonlyArray<string>
  /** The skills that got a `run_script` tool, by name. */
  readonly runnable: ReadonlyArray<string>
}

type Outcome = {
  readonly spec?: CatalogSource.DerivedPluginSpec | undefined
  readonly file: string
  readonly errors: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
}

const codeOf = (thrown: unknown): string =>
  (typeof thrown === "object" && thrown !== null ? (thrown as { code?: string }).code : undefined) ??
  describe(thrown)

const checkLimit = (value: number | undefined, fallback: number, name: string): number => {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < 1)
    throw new RangeError(`loadSkills: ${name} must be a positive integer (got ${String(value)}).`)
  return value
}

/** Runs `f` over `items`, at most `limit` at a time, keeping the order of `items` in the result. */
const mapLimit = async <A, B>(
  items: ReadonlyArray<A>,
  limit: number,
  f: (a: A) => Promise<B>
): Promise<B[]> => {
  const out = new Array<B>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await f(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

/** The subfolders of `root` that may be skills: not hidden; a link to a folder counts. */
const candidateFolders = async (root: string, entries: ReadonlyArray<Dirent>): Promise<string[]> => {
  const names: string[] = []
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue
    if (entry.isDirectory()) names.push(entry.name)
    else if (entry.isSymbolicLink()) {
      // A skill linked in from elsewhere (a shared checkout) is still a skill of this folder.
      const target = await stat(join(root, entry.name)).catch(() => undefined)
      if (target?.isDirectory()) names.push(entry.name)
    }
  }
  return names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

/** Reads one skill folder. Never throws: whatever goes wrong is an error naming the file. */
const loadOne = async (
  folder: string,
  name: string,
  limits: { readonly maxFileBytes: number; readonly maxGuideBytes: number },
  run: LoadSkillsOptions["run"]
): Promise<Outcome | undefined> => {
  const file = join(folder, SKILL_FILE)
  let info: Stats
  try {
    info = await stat(file)
  } catch (thrown) {
    const code = codeOf(thrown)
    if (code === "ENOENT" || code === "ENOTDIR") return undefined // not a skill folder
    return { file, errors: [`${file} could not be read (${code}).`], warnings: [] }
  }
  if (!info.isFile()) return { file, errors: [`${file} is not a file.`], warnings: [] }
  const size = info.size
  // Checked before reading: a file of gigabytes is refused without loading it.
  if (size > limits.maxGuideBytes + FRONT_MATTER_BYTES) {
    return {
      file,
      errors: [
        `${file} is ${size} bytes, too big for a skill: its instructions may be at most ${limits.maxGuideBytes} bytes (maxGuideBytes).`
      ],
      warnings: []
    }
  }
  let text: string
  let rootReal: string
  try {
    text = await readFile(file, "utf8")
    rootReal = await realpath(folder)
  } catch (thrown) {
    return { file, errors: [`${file} could not be read (${codeOf(thrown)}).`], warnings: [] }
  }
  const parsed = parseSkillFile(text, file, name)
  const facts = parsed.facts
  if (facts === undefined) return { file, errors: parsed.errors, warnings: parsed.warnings }
  const warnings = [...parsed.warnings]
  const guideBytes = Buffer.byteLength(facts.body, "utf8")
  if (guideBytes > limits.maxGuideBytes) {
    return {
      file,
      errors: [
        `${file}: its instructions are ${guideBytes} bytes, over the ${limits.maxGuideBytes} a skill's operating guide may be (maxGuideBytes); move detail into reference files.`
      ],
      warnings
    }
  }
  if (facts.body.length === 0)
    warnings.push(
      `${file} has no instructions after its front matter: loading the skill gives the model nothing to follow.`
    )
  const tool = await readFileTool(facts.name, rootReal, { maxFileBytes: limits.maxFileBytes })
  const mayRun = run !== undefined && (run.skills === "all" || run.skills.includes(facts.name))
  const runner = mayRun ? await runScriptTool(facts.name, rootReal, run.runner) : undefined
  const spec: CatalogSource.DerivedPluginSpec = {
    name: facts.name,
    source: { kind: "skill", path: folder },
    manifest: CatalogSource.deriveSkillManifest({ name: facts.name, description: facts.description }),
    ...(facts.override === undefined ? {} : { override: facts.override }),
    tools: [...(tool === undefined ? [] : [tool]), ...(runner === undefined ? [] : [runner])],
    ...(facts.body.length === 0 ? {} : { operatingGuide: facts.body })
  }
  return { spec, file, errors: [], warnings }
}

/**
 * Reads the Agent Skills folders `dir` (one, or several: a project's and a user's, say): each
 * immediate subfolder holding a `SKILL.md` becomes one spec for `CatalogSource.toPlugins`, with
 * the manifest `CatalogSource.deriveSkillManifest` gives, `metadata.plugboard` as the override,
 * the body as the operating guide, and a `read_file` tool when the folder holds other files.
 * Hidden folders and folders without `SKILL.md` are skipped. Never rejects for a bad skill or a
 * missing `dir`: those are `errors`; it rejects only for invalid options.
 */
export const loadSkills = async (
  dir: string | ReadonlyArray<string>,
  options: LoadSkillsOptions = {}
): Promise<LoadedSkills> => {
  const limits = {
    maxFileBytes: checkLimit(options.maxFileBytes, DEFAULT_MAX_FILE_BYTES, "maxFileBytes"),
    maxGuideBytes: checkLimit(options.maxGuideBytes, DEFAULT_MAX_GUIDE_BYTES, "maxGuideBytes")
  }
  const specs: CatalogSource.DerivedPluginSpec[] = []
  const errors: string[] = []
  const warnings: string[] = []
  const declaredIn = new Map<string, string>()
  for (const given of typeof dir === "string" ? [dir] : dir) {
    const root = resolve(given)
    let entries: Dirent[]
    try {
      const info = await stat(root)
      if (!info.isDirectory()) {
        errors.push(`The skills folder ${root} is not a directory.`)
        continue
      }
      entries = await readdir(root, { withFileTypes: true })
    } catch (thrown) {
      const code = codeOf(thrown)
      errors.push(
        code === "ENOENT"
          ? `The skills folder ${root} does not exist.`
          : `The skills folder ${root} could not be read (${code}).`
      )
      continue
    }
    const names = await candidateFolders(root, entries)
    const outcomes = await mapLimit(names, CONCURRENCY, (name) =>
      loadOne(join(root, name), name, limits, options.run)
    )
    for (const outcome of outcomes) {
      if (outcome === undefined) continue
      errors.push(...outcome.errors)
      warnings.push(...outcome.warnings)
      const spec = outcome.spec
      if (spec === undefined) continue
      // A name equals its folder's, so two skills share one only across two of the given folders.
      const first = declaredIn.get(spec.name)
      if (first !== undefined) {
        errors.push(
          `${outcome.file} declares the skill '${spec.name}', which ${first} already declares: skill names must be unique.`
        )
        continue
      }
      declaredIn.set(spec.name, outcome.file)
      specs.push(spec)
    }
  }
  const runnable = specs.filter((s) => s.tools.some((t) => t.name === RUN_SCRIPT_TOOL)).map((s) => s.name)
  if (options.run !== undefined && options.run.skills !== "all")
    for (const name of options.run.skills)
      if (!declaredIn.has(name))
        warnings.push(`SKILLS_RUN names the skill '${name}', which no skills folder declares.`)
      else if (!runnable.includes(name))
        warnings.push(`SKILLS_RUN names the skill '${name}', which has no scripts/ to run.`)
  return { specs, errors, warnings, runnable }
}
