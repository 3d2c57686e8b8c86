/**
 * Reading one `SKILL.md`: the YAML front matter between two `---` lines, checked by the Agent
 * Skills format (`name`, `description`, the optional fields), and the Markdown body after it.
 * Pure: the text comes in, facts and sentences for the operator come out, so every malformed
 * case is tested without a file system. Every message names the file, because the operator reads
 * it as a `[boot-error]` among those of many skills.
 */
import { describe, isPluginName } from "@plugboard/core"
import { LineCounter, parseDocument } from "yaml"

/** Longest skill name the Agent Skills format allows. */
export const NAME_MAX = 64
/** Longest description the Agent Skills format allows. */
export const DESCRIPTION_MAX = 1024

/** The front matter keys of the Agent Skills format; any other is a warning. */
const KNOWN_KEYS = new Set(["name", "description", "license", "compatibility", "metadata", "allowed-tools"])

/** What a well-formed `SKILL.md` says. */
export interface SkillFileFacts {
  readonly name: string
  readonly description: string
  /** The Markdown after the front matter, trimmed: the skill's instructions. */
  readonly body: string
  /** `metadata.plugboard`, as written: manifest fields over the derived ones. */
  readonly override?: unknown
}

/** The outcome of reading one `SKILL.md`: its facts when it is usable, and what to tell. */
export interface SkillFileResult {
  readonly facts?: SkillFileFacts | undefined
  readonly errors: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
}

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const typeName = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "a list" : typeof u)

/**
 * The front matter and the body, or undefined when the text does not open with a `---` line
 * closed by another. A byte order mark and Windows line ends are accepted: editors write both.
 */
const split = (text: string): { readonly yaml: string; readonly body: string } | undefined => {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/)
  if (lines[0]?.trimEnd() !== "---") return undefined
  const close = lines.findIndex((line, i) => i > 0 && line.trimEnd() === "---")
  if (close < 0) return undefined
  return { yaml: lines.slice(1, close).join("\n"), body: lines.slice(close + 1).join("\n") }
}

/** The front matter as a JS value, or the sentence saying why it is not YAML. */
const parseYaml = (yaml: string, file: string): { readonly value: unknown } | { readonly error: string } => {
  const lineCounter = new LineCounter()
  const doc = parseDocument(yaml, { lineCounter, prettyErrors: false, uniqueKeys: true })
  const first = doc.errors[0]
  if (first !== undefined) {
    // Lines are counted in the file, where the front matter starts after the opening `---`.
    const at = lineCounter.linePos(first.pos[0])
    const message = first.message.split("\n")[0]!.replace(/[.\s]+$/, "")
    return {
      error: `${file}: the front matter is not valid YAML (line ${at.line + 1}, column ${at.col}): ${message}.`
    }
  }
  try {
    // toJS throws on an alias to no anchor, or on more aliases than the YAML bomb guard allows.
    return { value: doc.toJS({ maxAliasCount: 100 }) }
  } catch (thrown) {
    const message = describe(thrown)
    return { error: `${file}: the front matter is not valid YAML: ${message.replace(/[.\s]+$/, "")}.` }
  }
}

/** The check of `name`: a sentence saying what is wrong, or undefined. */
const nameProblem = (name: unknown, file: string, folder: string): string | undefined => {
  if (name === undefined || name === null)
    return `${file}: the front matter has no 'name' (every skill needs one, equal to its folder's name '${folder}').`
  if (typeof name !== "string")
    return `${file}: the front matter's 'name' must be a string (got ${typeName(name)}).`
  if (name.trim().length === 0) return `${file}: the front matter's 'name' is empty.`
  // Core's plugin names are the Agent Skills names that start with a letter: check both at once,
  // here, so the error names the file instead of coming from the catalog later.
  if (name.length > NAME_MAX || !isPluginName(name))
    return `${file}: the skill name '${name.slice(0, 80)}' is not valid: a skill name is at most ${NAME_MAX} characters of lowercase letters, digits and single hyphens, starting with a letter and not ending with a hyphen.`
  if (name !== folder)
    return `${file}: the skill name '${name}' differs from its folder's name '${folder}' (the Agent Skills format requires them to be equal).`
  return undefined
}

/** The check of `description`: a sentence saying what is wrong, or undefined. */
const descriptionProblem = (description: unknown, file: string): string | undefined => {
  if (description === undefined || description === null)
    return `${file}: the front matter has no 'description' (it says what the skill does and when to use it).`
  if (typeof description !== "string")
    return `${file}: the front matter's 'description' must be a string (got ${typeName(description)}).`
  if (description.trim().length === 0) return `${file}: the front matter's 'description' is empty.`
  if (description.length > DESCRIPTION_MAX)
    return `${file}: the front matter's 'description' is ${description.length} characters long, over the ${DESCRIPTION_MAX} the Agent Skills format allows.`
  return undefined
}

/**
 * Reads the text of `file` (a `SKILL.md` in the folder named `folder`): its facts when the front
 * matter is well formed, else the errors. Unknown top-level keys and optional fields of the wrong
 * type are warnings: they change nothing plugboard does.
 */
export const parseSkillFile = (text: string, file: string, folder: string): SkillFileResult => {
  const parts = split(text)
  if (parts === undefined) {
    return {
      errors: [
        `${file} has no YAML front matter: it must start with a '---' line, then the front matter (name, description), then another '---' line.`
      ],
      warnings: []
    }
  }
  const parsed = parseYaml(parts.yaml, file)
  if ("error" in parsed) return { errors: [parsed.error], warnings: [] }
  const front = parsed.value
  if (!isRecord(front)) {
    const got = front === null || front === undefined ? "it is empty" : `got ${typeName(front)}`
    return {
      errors: [`${file}: the front matter must be a YAML mapping with 'name' and 'description' (${got}).`],
      warnings: []
    }
  }
  const errors = [nameProblem(front.name, file, folder), descriptionProblem(front.description, file)].filter(
    (e): e is string => e !== undefined
  )
  const warnings: string[] = []
  for (const key of Object.keys(front)) {
    if (!KNOWN_KEYS.has(key))
      warnings.push(
        `${file}: the front matter key '${key}' is not part of the Agent Skills format and is ignored (put extra fields under 'metadata').`
      )
  }
  for (const key of ["license", "compatibility", "allowed-tools"]) {
    const value = front[key]
    if (value !== undefined && typeof value !== "string")
      warnings.push(`${file}: the front matter's '${key}' should be a string (got ${typeName(value)}).`)
  }
  const metadata = front.metadata
  if (metadata !== undefined && !isRecord(metadata))
    warnings.push(
      `${file}: the front matter's 'metadata' should be a mapping (got ${typeName(metadata)}); it is ignored.`
    )
  if (errors.length > 0) return { errors, warnings }
  const override = isRecord(metadata) ? metadata.plugboard : undefined
  return {
    facts: {
      name: front.name as string,
      description: front.description as string,
      body: parts.body.trim(),
      ...(override === undefined ? {} : { override })
    },
    errors,
    warnings
  }
}
