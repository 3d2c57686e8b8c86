/** loadSkills: what a folder of skills becomes, and every way a skill can be malformed. */
import { mkdir, symlink, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { CatalogSource } from "@plugboard/core"
import { DEFAULT_MAX_GUIDE_BYTES, loadSkills } from "@plugboard/skills"
import { describe, expect, it } from "vitest"
import { FIXTURES, goodFront, skillText, tempDir, writeFiles } from "./helpers.js"

describe("loadSkills on the fixture folder", () => {
  it("returns the two good skills and one error naming the malformed file", async () => {
    const { specs, errors, warnings } = await loadSkills(FIXTURES)
    expect(specs.map((s) => s.name)).toEqual(["csv-cleanup", "release-notes"])
    expect(errors).toHaveLength(1)
    expect(errors[0]).toContain(join(FIXTURES, "broken-yaml", "SKILL.md"))
    // The unclosed `[` is on the file's fourth line (the opening `---` is line 1).
    expect(errors[0]).toMatch(/not valid YAML \(line 4, column \d+\)/)
    expect(warnings).toEqual([])
  })

  it("derives each spec by core's rule: manifest, source, guide, override, one read_file tool", async () => {
    const { specs } = await loadSkills(FIXTURES)
    const csv = specs[0]!
    expect(csv.manifest).toEqual(
      CatalogSource.deriveSkillManifest({
        name: "csv-cleanup",
        description: "Cleans up messy CSV files. Use when a CSV has broken quoting or mixed delimiters."
      })
    )
    expect(csv.source).toEqual({ kind: "skill", path: join(FIXTURES, "csv-cleanup") })
    expect(csv.operatingGuide).toBe(
      "# CSV cleanup\n\nSniff the delimiter first; see `references/dialects.md`."
    )
    expect(csv.override).toEqual({ category: "data" })
    expect(csv.tools.map((t) => t.name)).toEqual(["read_file"])
    expect(csv.tools[0]!.description).toContain("Files: references/dialects.md.")
    expect(csv.tools[0]!.inputSchema).toEqual({
      type: "object",
      properties: { path: { type: "string", description: expect.any(String) } },
      required: ["path"],
      additionalProperties: false
    })
    expect(specs[1]!.override).toBeUndefined()
  })
})

/** One malformed skill beside a good one: the good one is still read, the error names the file. */
const oneBad = async (folder: string, text: string) => {
  const root = await tempDir()
  await writeFiles(root, {
    [`${folder}/SKILL.md`]: text,
    "good-one/SKILL.md": skillText(goodFront("good-one"))
  })
  const result = await loadSkills(root)
  expect(result.specs.map((s) => s.name)).toEqual(["good-one"])
  expect(result.errors).toHaveLength(1)
  expect(result.errors[0]).toContain(join(root, folder, "SKILL.md"))
  // A full sentence.
  expect(result.errors[0]).toMatch(/\.$/)
  return result.errors[0]!
}

describe("a malformed skill is an error naming its file, and the others are still read", () => {
  const cases: ReadonlyArray<readonly [string, string, string, RegExp]> = [
    ["no front matter", "plain", "# Just Markdown\n", /has no YAML front matter/],
    [
      "an unclosed front matter",
      "unclosed",
      "---\nname: unclosed\ndescription: x\n\n# Body\n",
      /no YAML front matter/
    ],
    [
      "YAML that does not parse",
      "bad-yaml",
      skillText("name: bad-yaml\ndescription: a: b"),
      /not valid YAML \(line 3,/
    ],
    [
      "a duplicated key",
      "dup-key",
      skillText("name: dup-key\nname: dup-key\ndescription: x"),
      /line 3.*unique/
    ],
    ["an alias to no anchor", "alias", skillText("name: *nowhere\ndescription: x"), /not valid YAML/],
    ["front matter that is a list", "listed", skillText("- name\n- description"), /must be a YAML mapping/],
    ["an empty front matter", "empty", skillText(""), /must be a YAML mapping.*empty/],
    ["a missing name", "no-name", skillText("description: Does things."), /has no 'name'.*'no-name'/],
    ["an empty name", "empty-name", skillText("name: ''\ndescription: x"), /'name' is empty/],
    [
      "a name that is not a string",
      "num-name",
      skillText("name: 42\ndescription: x"),
      /'name' must be a string \(got number\)/
    ],
    [
      "a name not in kebab-case",
      "Bad_Name",
      skillText("name: Bad_Name\ndescription: x"),
      /'Bad_Name' is not valid/
    ],
    [
      "a name starting with a digit",
      "3d-print",
      skillText("name: 3d-print\ndescription: x"),
      /not valid.*starting with a letter/
    ],
    ["a name with a double hyphen", "a--b", skillText("name: a--b\ndescription: x"), /'a--b' is not valid/],
    [
      "a name differing from its folder",
      "folder-name",
      skillText("name: other-name\ndescription: x"),
      /'other-name' differs from its folder's name 'folder-name'/
    ],
    ["a missing description", "no-desc", skillText("name: no-desc"), /has no 'description'/],
    [
      "an empty description",
      "empty-desc",
      skillText("name: empty-desc\ndescription: '   '"),
      /'description' is empty/
    ],
    [
      "a description that is not a string",
      "list-desc",
      skillText("name: list-desc\ndescription: [a, b]"),
      /'description' must be a string \(got a list\)/
    ],
    [
      "a description over 1024 characters",
      "long-desc",
      skillText(`name: long-desc\ndescription: ${"x".repeat(1025)}`),
      /1025 characters long, over the 1024/
    ]
  ]
  for (const [what, folder, text, message] of cases) {
    it(what, async () => {
      expect(await oneBad(folder, text)).toMatch(message)
    })
  }

  it("a name over 64 characters", async () => {
    const name = `a${"-b".repeat(32)}`
    expect(name.length).toBe(65)
    expect(await oneBad(name, skillText(`name: ${name}\ndescription: x`))).toMatch(
      /is not valid: .*at most 64/
    )
  })

  it("a name and description in both errors when both are wrong", async () => {
    const root = await tempDir()
    await writeFiles(root, { "x/SKILL.md": skillText("name: 7\ndescription: 8") })
    const { specs, errors } = await loadSkills(root)
    expect(specs).toEqual([])
    expect(errors).toHaveLength(2)
  })

  it("instructions over maxGuideBytes", async () => {
    const root = await tempDir()
    await writeFiles(root, {
      "big/SKILL.md": skillText(goodFront("big"), "é".repeat(600)),
      "good-one/SKILL.md": skillText(goodFront("good-one"))
    })
    const { specs, errors } = await loadSkills(root, { maxGuideBytes: 1000 })
    expect(specs.map((s) => s.name)).toEqual(["good-one"])
    expect(errors).toEqual([
      `${join(root, "big", "SKILL.md")}: its instructions are 1200 bytes, over the 1000 a skill's operating guide may be (maxGuideBytes); move detail into reference files.`
    ])
  })

  it("a SKILL.md far over the limit is refused without being parsed", async () => {
    const root = await tempDir()
    await writeFiles(root, {
      "huge/SKILL.md": skillText(goodFront("huge"), "x".repeat(DEFAULT_MAX_GUIDE_BYTES * 2))
    })
    const { specs, errors } = await loadSkills(root)
    expect(specs).toEqual([])
    expect(errors[0]).toMatch(/huge\/SKILL\.md is \d+ bytes, too big for a skill/)
  })

  it("a SKILL.md that is a folder", async () => {
    const root = await tempDir()
    await mkdir(join(root, "odd", "SKILL.md"), { recursive: true })
    const { errors } = await loadSkills(root)
    expect(errors).toEqual([`${join(root, "odd", "SKILL.md")} is not a file.`])
  })

  it("two skills with the same name, across two skills folders", async () => {
    const [a, b] = [await tempDir(), await tempDir()]
    await writeFiles(a, { "twin/SKILL.md": skillText(goodFront("twin")) })
    await writeFiles(b, {
      "twin/SKILL.md": skillText(goodFront("twin")),
      "solo/SKILL.md": skillText(goodFront("solo"))
    })
    const { specs, errors } = await loadSkills([a, b])
    expect(specs.map((s) => [s.name, s.source])).toEqual([
      ["twin", { kind: "skill", path: join(a, "twin") }],
      ["solo", { kind: "skill", path: join(b, "solo") }]
    ])
    expect(errors).toEqual([
      `${join(b, "twin", "SKILL.md")} declares the skill 'twin', which ${join(a, "twin", "SKILL.md")} already declares: skill names must be unique.`
    ])
  })
})

describe("the skills folder itself", () => {
  it("a folder that does not exist is an error, not a rejection", async () => {
    const missing = join(await tempDir(), "nope")
    expect(await loadSkills(missing)).toEqual({
      specs: [],
      errors: [`The skills folder ${missing} does not exist.`],
      warnings: [],
      runnable: []
    })
  })

  it("a file is not a skills folder", async () => {
    const root = await tempDir()
    await writeFile(join(root, "file"), "x")
    expect((await loadSkills(join(root, "file"))).errors).toEqual([
      `The skills folder ${join(root, "file")} is not a directory.`
    ])
  })

  it("skips hidden folders, folders without SKILL.md and loose files, silently", async () => {
    const root = await tempDir()
    await writeFiles(root, {
      ".git/SKILL.md": skillText(goodFront(".git")),
      ".hidden/SKILL.md": skillText(goodFront("hidden")),
      "notes/README.md": "Not a skill.",
      "SKILL.md": skillText(goodFront("top")),
      "real/SKILL.md": skillText(goodFront("real"))
    })
    expect(await loadSkills(root)).toMatchObject({ specs: [{ name: "real" }], errors: [], warnings: [] })
  })

  it("reads a skill folder linked in from elsewhere", async () => {
    const [root, elsewhere] = [await tempDir(), await tempDir()]
    await writeFiles(elsewhere, {
      "linked/SKILL.md": skillText(goodFront("linked")),
      "linked/ref.md": "Ref."
    })
    await symlink(join(elsewhere, "linked"), join(root, "linked"))
    const { specs, errors } = await loadSkills(root)
    expect(errors).toEqual([])
    expect(specs.map((s) => s.name)).toEqual(["linked"])
    expect(specs[0]!.tools[0]!.description).toContain("Files: ref.md.")
  })

  it("rejects invalid options", async () => {
    await expect(loadSkills(FIXTURES, { maxFileBytes: 0 })).rejects.toThrow(
      /maxFileBytes must be a positive integer/
    )
    await expect(loadSkills(FIXTURES, { maxGuideBytes: 1.5 })).rejects.toThrow(/maxGuideBytes/)
  })
})

describe("what a skill may hold", () => {
  it("a folder with nothing but SKILL.md has no tool", async () => {
    const root = await tempDir()
    await writeFiles(root, { "bare/SKILL.md": skillText(goodFront("bare")), "bare/.DS_Store": "x" })
    const { specs } = await loadSkills(root)
    expect(specs[0]!.tools).toEqual([])
  })

  it("the optional fields of the format are accepted; other keys are warnings naming file and key", async () => {
    const root = await tempDir()
    const front = [
      goodFront("full"),
      "license: Apache-2.0",
      "compatibility: Needs network access.",
      "allowed-tools: Bash(git:*) Read",
      "metadata:",
      "  author: someone",
      "  plugboard:",
      "    visibility: always",
      "version: 2",
      "tags: [x]"
    ].join("\n")
    await writeFiles(root, { "full/SKILL.md": skillText(front) })
    const { specs, errors, warnings } = await loadSkills(root)
    expect(errors).toEqual([])
    expect(specs[0]!.override).toEqual({ visibility: "always" })
    const file = join(root, "full", "SKILL.md")
    expect(warnings).toEqual([
      `${file}: the front matter key 'version' is not part of the Agent Skills format and is ignored (put extra fields under 'metadata').`,
      `${file}: the front matter key 'tags' is not part of the Agent Skills format and is ignored (put extra fields under 'metadata').`
    ])
  })

  it("optional fields of the wrong type and an empty body are warnings", async () => {
    const root = await tempDir()
    await writeFiles(root, {
      "odd/SKILL.md": `---\n${goodFront("odd")}\nlicense: 3\nmetadata: [a]\n---\n\n`
    })
    const { specs, errors, warnings } = await loadSkills(root)
    expect(errors).toEqual([])
    expect(specs[0]!.operatingGuide).toBeUndefined()
    expect(warnings).toHaveLength(3)
    expect(warnings.join("\n")).toMatch(
      /'license' should be a string[\s\S]*'metadata' should be a mapping[\s\S]*no instructions/
    )
  })

  it("accepts a byte order mark and Windows line ends", async () => {
    const root = await tempDir()
    await writeFiles(root, {
      "crlf/SKILL.md": `\uFEFF---\r\nname: crlf\r\ndescription: Works.\r\n---\r\n\r\n# Body\r\n`
    })
    const { specs, errors } = await loadSkills(root)
    expect(errors).toEqual([])
    expect(specs[0]!.operatingGuide).toBe("# Body")
  })
})
