/** Temporary skill folders for the skills tests, removed after each test. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { ToolOutput } from "@plugboard/core"
import { afterEach } from "vitest"

/** The fixture folder: three skills, `broken-yaml` malformed. */
export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "fixtures")

/** The repository's example skills. */
export const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), "../../../../examples/skills")

const made: string[] = []
afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
})

/** A fresh temporary folder, removed after the test. */
export const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), "plugboard-skills-"))
  made.push(dir)
  return dir
}

/** A `SKILL.md` text: the front matter lines, then the body. */
export const skillText = (front: string, body = "# Steps\n\nDo the thing.") =>
  `---\n${front}\n---\n\n${body}\n`

/** A well-formed skill's front matter. */
export const goodFront = (name: string) =>
  `name: ${name}\ndescription: Does ${name} things. Use when asked to.`

/** Writes files (relative path → content) under `root`, creating folders. */
export const writeFiles = async (root: string, files: Readonly<Record<string, string | Uint8Array>>) => {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true })
    await writeFile(join(root, path), content)
  }
}

/** The text of a tool's answer, and whether it is an error answer. */
export const answer = (output: unknown): { readonly text: string; readonly isError: boolean } => {
  if (!ToolOutput.isToolOutput(output)) throw new Error(`not a ToolOutput: ${String(output)}`)
  return { text: ToolOutput.toText(output), isError: output.isError }
}
