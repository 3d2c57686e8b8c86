/**
 * The `read_file` tool of a skill: it reads the skill's own files and nothing else, whatever path
 * the model sends, and answers every refusal as an error answer (never a throw).
 */
import { spawnSync } from "node:child_process"
import { readFile, symlink } from "node:fs/promises"
import { join } from "node:path"
import type { CatalogSource, RuntimeContext } from "@plugboard/core"
import { loadSkills } from "@plugboard/skills"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { answer, FIXTURES, goodFront, skillText, tempDir, writeFiles } from "./helpers.js"

// The tool never reads its context: a turn's context is irrelevant to reading a file.
const context = {} as RuntimeContext

/** The read_file tool of the one skill in `root`. */
const toolOf = async (
  root: string,
  options?: Parameters<typeof loadSkills>[1]
): Promise<CatalogSource.SourceTool> => {
  const { specs, errors } = await loadSkills(root, options)
  expect(errors).toEqual([])
  const tool = specs[0]?.tools[0]
  if (tool === undefined) throw new Error("no read_file tool")
  return tool
}

/** The read_file tool of the fixture skill `csv-cleanup` (its folder also holds a malformed skill). */
const fixtureTool = async (): Promise<CatalogSource.SourceTool> => {
  const { specs } = await loadSkills(FIXTURES)
  return specs.find((s) => s.name === "csv-cleanup")!.tools[0]!
}

const read = async (tool: CatalogSource.SourceTool, path: unknown) =>
  answer(await tool.call({ path }, context))

/** A skill `s` in a fresh folder, with `files` besides its SKILL.md. */
const skillWith = async (files: Readonly<Record<string, string | Uint8Array>>) => {
  const root = await tempDir()
  await writeFiles(root, {
    "s/SKILL.md": skillText(goodFront("s")),
    ...Object.fromEntries(Object.entries(files).map(([p, c]) => [`s/${p}`, c]))
  })
  return { root, folder: join(root, "s") }
}

describe("read_file reads the skill's files", () => {
  it("reads a reference file by relative path", async () => {
    const tool = await fixtureTool()
    const expected = await readFile(join(FIXTURES, "csv-cleanup", "references", "dialects.md"), "utf8")
    expect(await read(tool, "references/dialects.md")).toEqual({ text: expected, isError: false })
    // Spelled other ways that stay inside the folder.
    expect((await read(tool, "./references//dialects.md")).text).toBe(expected)
    expect((await read(tool, "references/../references/dialects.md")).text).toBe(expected)
    expect((await read(tool, "references\\dialects.md")).text).toBe(expected)
  })

  it("reads SKILL.md too", async () => {
    const tool = await fixtureTool()
    expect((await read(tool, "SKILL.md")).text).toMatch(/^---\nname: csv-cleanup/)
  })

  it("follows a link that stays inside the folder", async () => {
    const { root, folder } = await skillWith({ "references/a.md": "A." })
    await symlink(join(folder, "references", "a.md"), join(folder, "alias.md"))
    const tool = await toolOf(root)
    expect(tool.description).toContain("Files: alias.md, references/a.md.")
    expect(await read(tool, "alias.md")).toEqual({ text: "A.", isError: false })
  })

  it("answers an empty file as such", async () => {
    const { root } = await skillWith({ "empty.txt": "" })
    expect(await read(await toolOf(root), "empty.txt")).toEqual({
      text: "'empty.txt' is empty.",
      isError: false
    })
  })
})

describe("read_file refuses, as an error answer", () => {
  it("a ../ escape", async () => {
    const tool = await fixtureTool()
    for (const path of [
      "../release-notes/SKILL.md",
      "references/../../release-notes/SKILL.md",
      "..\\release-notes\\SKILL.md",
      ".."
    ]) {
      const got = await read(tool, path)
      expect(got.isError, path).toBe(true)
      expect(got.text).toContain("leads out of the skill's folder")
    }
  })

  it("an absolute path, even one inside the folder", async () => {
    const tool = await fixtureTool()
    for (const path of [
      "/etc/passwd",
      join(FIXTURES, "csv-cleanup", "SKILL.md"),
      "\\\\server\\share\\x",
      "C:\\Windows\\win.ini",
      "c:x"
    ]) {
      const got = await read(tool, path)
      expect(got.isError, path).toBe(true)
      expect(got.text).toContain("is an absolute path")
    }
  })

  it("a link to a file or a folder outside", async () => {
    const outside = await tempDir()
    await writeFiles(outside, { "secret.txt": "SECRET", "dir/secret.txt": "SECRET" })
    const { root, folder } = await skillWith({ "ref.md": "Ref." })
    await symlink(join(outside, "secret.txt"), join(folder, "leak.txt"))
    await symlink(join(outside, "dir"), join(folder, "leakdir"))
    const tool = await toolOf(root)
    // Links out of the folder are not offered either.
    expect(tool.description).toContain("Files: ref.md.")
    for (const path of ["leak.txt", "leakdir/secret.txt", "leakdir"]) {
      const got = await read(tool, path)
      expect(got, path).toEqual({
        text: `'${path}' is a link to outside the skill's folder: only its own files can be read.`,
        isError: true
      })
    }
  })

  it("a folder, naming the files in it", async () => {
    const tool = await fixtureTool()
    expect(await read(tool, "references")).toEqual({
      text: "'references' is a folder, not a file. Files in it: references/dialects.md.",
      isError: true
    })
    expect((await read(tool, ".")).isError).toBe(true)
  })

  it("a missing file", async () => {
    const tool = await fixtureTool()
    expect(await read(tool, "references/nope.md")).toEqual({
      text: "The 'csv-cleanup' skill has no file 'references/nope.md' (its files are listed in this tool's description).",
      isError: true
    })
    expect((await read(tool, "SKILL.md/x")).isError).toBe(true)
  })

  it("a hidden file", async () => {
    const { root } = await skillWith({ ".env": "TOKEN=x", "ref.md": "Ref." })
    const got = await read(await toolOf(root), ".env")
    expect(got).toEqual({
      text: "'.env' is a hidden file: hidden files of a skill are not read.",
      isError: true
    })
  })

  it("a path that is not a string, or empty", async () => {
    const tool = await fixtureTool()
    for (const path of [undefined, 42, ["a"], "", "  ", "a\0b"])
      expect((await read(tool, path)).isError).toBe(true)
  })

  it.skipIf(spawnSync("mkfifo", ["--version"]).status !== 0)("a FIFO, without blocking on it", async () => {
    const { root, folder } = await skillWith({ "ref.md": "Ref." })
    expect(spawnSync("mkfifo", [join(folder, "pipe")]).status).toBe(0)
    expect(await read(await toolOf(root), "pipe")).toEqual({
      text: "'pipe' is not a regular file.",
      isError: true
    })
  })
})

describe("read_file bounds what it returns", () => {
  it("cuts a big file at maxFileBytes and says so", async () => {
    const big = "0123456789".repeat(500)
    const { root } = await skillWith({ "big.txt": big })
    const got = await read(await toolOf(root, { maxFileBytes: 1000 }), "big.txt")
    expect(got).toEqual({
      text: `${big.slice(0, 1000)}\n\n[truncated: first 1000 of 5000 bytes]`,
      isError: false
    })
  })

  it("never cuts a UTF-8 character in two", async () => {
    const { root } = await skillWith({ "accents.txt": "é".repeat(1000) })
    const got = await read(await toolOf(root, { maxFileBytes: 1001 }), "accents.txt")
    expect(got.text).toBe(`${"é".repeat(500)}\n\n[truncated: first 1000 of 2000 bytes]`)
  })

  it("uses the 64 KiB default", async () => {
    const { root } = await skillWith({ "big.txt": "x".repeat(100_000) })
    expect((await read(await toolOf(root), "big.txt")).text).toMatch(
      /\[truncated: first 65536 of 100000 bytes\]$/
    )
  })

  it("answers a binary file with its size and type, not its bytes", async () => {
    const png = new Uint8Array(3000)
    png.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d])
    const { root } = await skillWith({ "assets/logo.png": png, "assets/blob.bin": new Uint8Array([1, 0, 2]) })
    const tool = await toolOf(root, { maxFileBytes: 100 })
    expect(await read(tool, "assets/logo.png")).toEqual({
      text: "'assets/logo.png' is a binary file (image/png, 3,000 bytes); its bytes are not shown.",
      isError: false
    })
    expect((await read(tool, "assets/blob.bin")).text).toBe(
      "'assets/blob.bin' is a binary file (application/octet-stream, 3 bytes); its bytes are not shown."
    )
  })

  it("lists at most 50 files in its description", async () => {
    const files = Object.fromEntries(
      Array.from({ length: 60 }, (_, i) => [`refs/f${String(i).padStart(2, "0")}.md`, "x"])
    )
    const { root } = await skillWith(files)
    const { description } = await toolOf(root)
    expect(description).toContain("refs/f49.md, … and 10 more.")
    expect(description).not.toContain("refs/f50.md")
  })
})

describe("read_file never reads outside the folder (property)", () => {
  it("whatever relative path made of '..', '.', 'a', 'l', '/' and '\\\\'", async () => {
    // Outside the skill (T/s), files with the names of the ones inside, so an escape would find
    // something; and two links out (T/s/l to T, T/s/a/l to T/x), which a lexical check alone
    // would let through.
    const top = await tempDir()
    await writeFiles(top, {
      a: "OUTSIDE",
      "x/a": "OUTSIDE",
      "s/SKILL.md": skillText(goodFront("s")),
      "s/a/a": "INSIDE",
      "s/a/a.txt": "INSIDE"
    })
    await symlink(top, join(top, "s", "l"))
    await symlink(join(top, "x"), join(top, "s", "a", "l"))
    const tool = await toolOf(top)
    const inside = new Set(["INSIDE", await readFile(join(top, "s", "SKILL.md"), "utf8")])
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("..", ".", "a", "l", "/", "\\", "a.txt"), { maxLength: 12 }),
        async (parts) => {
          const got = await read(tool, parts.join(""))
          expect(got.text).not.toContain("OUTSIDE")
          if (!got.isError) expect(inside.has(got.text)).toBe(true)
        }
      ),
      { numRuns: 1000 }
    )
  })
})
