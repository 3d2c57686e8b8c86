/**
 * What the docs' links and the code's citations point at must exist: every relative link of
 * README.md and docs/ resolves to a file (and its `#anchor` to a heading of that file), and every
 * comment that cites a page (`docs/<page>.md#<anchor>`, or `README "<Section>"`) names one that
 * exists. host-node's docsLinks test runs both over the repository.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

/** The repository's root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..")

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export const slugOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-")

/** The anchors of a markdown file's headings, numbered as GitHub numbers repeats (`x`, `x-1`). */
export const anchorsOf = (markdown: string): ReadonlySet<string> => {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  let fenced = false
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    if (fenced) continue
    const match = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)
    if (match === null) continue
    const base = slugOf(match[1]!.replace(/`/g, ""))
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** The headings' texts of a markdown file (for `README "Section"` citations). */
export const headingsOf = (markdown: string): ReadonlySet<string> =>
  new Set(
    markdown
      .split("\n")
      .map((line) => /^#{1,6}\s+(.+?)\s*$/.exec(line)?.[1]?.replace(/`/g, ""))
      .filter((h): h is string => h !== undefined)
  )

const walk = (dir: string, keep: (file: string) => boolean): Array<string> => {
  const out: Array<string> = []
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue
    const path = join(dir, name)
    if (statSync(path).isDirectory()) out.push(...walk(path, keep))
    else if (keep(path)) out.push(path)
  }
  return out
}

/** README.md and every markdown page under docs/. */
export const markdownFiles = (): Array<string> => [
  join(ROOT, "README.md"),
  ...walk(join(ROOT, "docs"), (f) => f.endsWith(".md"))
]

/** One link or citation that points at nothing. */
export interface Broken {
  readonly file: string
  readonly line: number
  readonly target: string
  readonly why: string
}

const anchorCache = new Map<string, ReadonlySet<string>>()
const anchorsOfFile = (file: string) => {
  let anchors = anchorCache.get(file)
  if (anchors === undefined) {
    anchors = anchorsOf(readFileSync(file, "utf8"))
    anchorCache.set(file, anchors)
  }
  return anchors
}

/** Checks a target (`path#anchor`, relative to `from`'s folder): the file exists, and the anchor too. */
const check = (from: string, target: string): string | undefined => {
  const [path, anchor] = target.split("#", 2) as [string, string | undefined]
  const file = path === "" ? from : resolve(dirname(from), decodeURIComponent(path))
  if (!existsSync(file)) return "no such file"
  if (anchor === undefined || anchor === "" || !file.endsWith(".md")) return undefined
  return anchorsOfFile(file).has(anchor.toLowerCase()) ? undefined : `no heading #${anchor}`
}

/** Every relative link of the markdown files that points at nothing. */
export const brokenLinks = (): Array<Broken> => {
  const out: Array<Broken> = []
  for (const file of markdownFiles()) {
    let fenced = false
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((text, i) => {
        if (/^\s*(```|~~~)/.test(text)) fenced = !fenced
        if (fenced) return
        // Inline code is not a link.
        const line = text.replace(/`[^`]*`/g, "")
        for (const match of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
          const target = match[1]!
          if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
          const why = check(file, target)
          if (why !== undefined) out.push({ file: relative(ROOT, file), line: i + 1, target, why })
        }
      })
  }
  return out
}

/** The source files whose comments may cite pages: packages, scripts, bench, examples. */
export const sourceFiles = (): Array<string> =>
  ["packages", "scripts", "bench", "examples"].flatMap((dir) =>
    walk(join(ROOT, dir), (f) => /\.(ts|tsx|mts|mjs|js|sh)$/.test(f) && !f.endsWith(".d.ts"))
  )

/** Every citation in the sources (`docs/x.md#y`, `README "Section"`) that points at nothing. */
export const brokenCitations = (): Array<Broken> => {
  const out: Array<Broken> = []
  const readme = headingsOf(readFileSync(join(ROOT, "README.md"), "utf8"))
  // This file names the forms it looks for; it cites nothing.
  for (const file of sourceFiles().filter((f) => !f.endsWith("docs-links.ts"))) {
    const text = readFileSync(file, "utf8")
    const lineOf = (index: number) => text.slice(0, index).split("\n").length
    const at = (index: number) => ({ file: relative(ROOT, file), line: lineOf(index) })
    for (const match of text.matchAll(/(?<![\w/.-])(docs\/[\w./-]+\.md)(#[\w-]+)?/g)) {
      const target = `${match[1]}${match[2] ?? ""}`
      const why = check(join(ROOT, "README.md"), target)
      if (why !== undefined) out.push({ ...at(match.index), target, why })
    }
    // A README section cited by name, `README "Section"` or `README's "Section"`, the quotes
    // possibly on the comment's next line.
    for (const match of text.matchAll(
      /README(?:\.md)?(?:'s)?[ ,]*(?:\n\s*(?:\*|\/\/|#)?\s*)?"([A-Z][^"\n]*)"/g
    )) {
      const section = match[1]!
      if (!readme.has(section))
        out.push({ ...at(match.index), target: `README "${section}"`, why: "no such section" })
    }
  }
  return out
}
