/**
 * A real skill runs its own scripts in bubblewrap: Anthropic's skill-creator (Apache-2.0,
 * vendored in test/vendored with its LICENSE.txt) validates and packages a skill the model puts
 * in the scratch directory (docs/skills-that-run.md).
 */
import { join } from "node:path"
import { CatalogSource, ToolOutput } from "@plugboard/core"
import { describe, expect, it } from "vitest"
import { loadSkills } from "../src/index.js"
import { skillText, writeFiles } from "./helpers.js"
import { BWRAP, PYTHON, runner, runScriptOf, sandboxDir, turnContext, VENDORED } from "./sandboxHelpers.js"

const mySkill = {
  path: "my-skill/SKILL.md",
  text: skillText("name: my-skill\ndescription: Greets people. Use when asked to greet.")
}

describe.skipIf(BWRAP === undefined || PYTHON === undefined)(
  "run_script on the vendored skill-creator",
  () => {
    it("offers one run_script tool listing the skill's scripts, beside read_file", async () => {
      const { spec, loaded } = await runScriptOf(VENDORED)
      expect(loaded.runnable).toEqual(["skill-creator"])
      const tool = spec.tools.find((t) => t.name === "run_script")!
      expect(tool.description).toContain("scripts/quick_validate.py")
      expect(tool.description).toContain("scripts/package_skill.py")
      expect(tool.description).not.toContain("__init__.py")
      expect(spec.tools.map((t) => t.name)).toEqual(["read_file", "run_script"])
      // Through core's derivation the tool is a plugin tool like any other.
      const derived = CatalogSource.toPlugins(loaded.specs)
      expect(derived.errors).toEqual([])
      expect(derived.plugins[0]!.tools!.map((t) => t.name)).toContain("run_script")
    })

    it("validates a skill the model writes in the scratch directory, with PyYAML from the venv", async () => {
      const { run } = await runScriptOf(VENDORED)
      const ok = await run({ script: "scripts/quick_validate.py", args: ["my-skill"], files: [mySkill] })
      expect(ok.isError).toBe(false)
      expect(ok.text).toContain("exited with code 0")
      expect(ok.text).toContain("Skill is valid!")
      const bad = await run(
        {
          script: "scripts/quick_validate.py",
          args: ["bad"],
          files: [{ path: "bad/SKILL.md", text: "no front matter" }]
        },
        turnContext({ turn: "m2" })
      )
      expect(bad.isError).toBe(true)
      expect(bad.text).toContain("exited with code 1")
      expect(bad.text).toMatch(/frontmatter/i)
    })

    it("packages the skill: the zip it writes comes back as a binary resource", async () => {
      const { run } = await runScriptOf(VENDORED)
      const res = await run({
        script: "scripts/package_skill.py",
        args: ["my-skill", "dist"],
        files: [mySkill]
      })
      expect(res.isError, res.text).toBe(false)
      const block = res.out.content.find(
        (b) => b.type === "resource" && b.uri === "scratch:///dist/my-skill.skill"
      )
      expect(block).toBeDefined()
      const zip = Buffer.from((block as { blob: string }).blob, "base64")
      expect(zip.subarray(0, 2).toString("latin1")).toBe("PK")
      expect(zip.includes(Buffer.from("my-skill/SKILL.md"))).toBe(true)
      // The input file came back unchanged, so it is not returned again.
      expect(
        res.out.content.some((b) => b.type === "resource" && b.uri === "scratch:///my-skill/SKILL.md")
      ).toBe(false)
    })

    it("keeps the scratch directory between runs of one turn, and starts the next turn empty", async () => {
      const { run } = await runScriptOf(VENDORED)
      await run({ script: "scripts/package_skill.py", args: ["my-skill", "dist"], files: [mySkill] })
      const again = await run({ script: "scripts/quick_validate.py", args: ["my-skill"] })
      expect(again.text).toContain("Skill is valid!")
      const next = await run(
        { script: "scripts/quick_validate.py", args: ["my-skill"] },
        turnContext({ turn: "m9" })
      )
      expect(next.isError).toBe(true)
      expect(next.text).toMatch(/SKILL\.md not found|not found/)
      const other = await run(
        { script: "scripts/quick_validate.py", args: ["my-skill"] },
        turnContext({ session: "s2" })
      )
      expect(other.isError).toBe(true)
    })
  }
)

describe.skipIf(BWRAP === undefined)("run_script: which skills run, and bad calls", () => {
  it("gives no skill a run_script tool unless the operator names it", async () => {
    const none = await loadSkills(VENDORED)
    expect(none.runnable).toEqual([])
    expect(none.specs[0]!.tools.map((t) => t.name)).toEqual(["read_file"])
    const other = await loadSkills(VENDORED, { run: { runner: runner(), skills: ["pdf"] } })
    expect(other.runnable).toEqual([])
    expect(other.warnings).toContain("SKILLS_RUN names the skill 'pdf', which no skills folder declares.")
  })

  it("warns when a named skill has nothing to run, and gives it no tool", async () => {
    const dir = await sandboxDir()
    await writeFiles(dir, { "plain/SKILL.md": skillText("name: plain\ndescription: Plain. Use when asked.") })
    const loaded = await loadSkills(dir, { run: { runner: runner(), skills: ["plain"] } })
    expect(loaded.specs[0]!.tools).toEqual([])
    expect(loaded.warnings).toContain("SKILLS_RUN names the skill 'plain', which has no scripts/ to run.")
  })

  it("answers a bad call with an error the model can act on, running nothing", async () => {
    const dir = await sandboxDir()
    await writeFiles(dir, {
      "s/SKILL.md": skillText("name: s\ndescription: S. Use when asked."),
      "s/scripts/ok.sh": "echo ok\n"
    })
    const { run } = await runScriptOf(dir)
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ script: "scripts/nope.sh" }, /not a script of the 's' skill\. Its scripts: scripts\/ok\.sh/],
      [{ script: "scripts/ok.sh", args: "x" }, /'args' must be a list of strings/],
      [{ script: "scripts/ok.sh", args: Array(65).fill("a") }, /at most 64 arguments/],
      [{ script: "scripts/ok.sh", files: [{ path: "a" }] }, /needs 'text' or 'base64'/],
      [{ script: "scripts/ok.sh", files: "x" }, /'files' must be a list/],
      [{ script: "scripts/ok.sh", files: [{ text: "x" }] }, /needs 'path'/]
    ]
    for (const [args, message] of cases) {
      const res = await run(args)
      expect(res.isError, JSON.stringify(args)).toBe(true)
      expect(res.text).toMatch(message)
    }
    const ok = await run({ script: "./scripts/ok.sh" })
    expect(ok).toMatchObject({ isError: false })
    expect(ok.text).toContain("stdout:\nok")
  })

  it("runs shell and Node scripts too, with the arguments given", async () => {
    const dir = await sandboxDir()
    await writeFiles(dir, {
      "s/SKILL.md": skillText("name: s\ndescription: S. Use when asked."),
      "s/scripts/args.sh": 'printf "%s|" "$@"; pwd\n',
      "s/scripts/sum.mjs": "console.log(process.argv.slice(2).map(Number).reduce((a, b) => a + b, 0))\n"
    })
    const { run } = await runScriptOf(dir)
    const sh = await run({ script: "scripts/args.sh", args: ["a b", "$HOME", "; rm -rf /"] })
    expect(sh.text).toContain("stdout:\na b|$HOME|; rm -rf /|/scratch")
    const js = await run({ script: "scripts/sum.mjs", args: ["1", "2", "39"] })
    expect(js.isError, js.text).toBe(false)
    expect(js.text).toContain("stdout:\n42")
  })

  it("returns text files as text resources and names a file too big to return", async () => {
    const dir = await sandboxDir()
    await writeFiles(dir, {
      "s/SKILL.md": skillText("name: s\ndescription: S. Use when asked."),
      "s/scripts/write.sh": "echo hello > out.txt\nhead -c 300000 /dev/zero > big.bin\n"
    })
    const { run } = await runScriptOf(dir)
    const res = await run({ script: "scripts/write.sh" })
    expect(res.out.content).toContainEqual({
      type: "resource",
      uri: "scratch:///out.txt",
      mimeType: "text/plain",
      text: "hello\n"
    })
    expect(res.out.content).toContainEqual(
      expect.objectContaining({ type: "resource_link", uri: "scratch:///big.bin", size: 300000 })
    )
    expect(res.text).toContain("Too big to return here")
    expect(ToolOutput.toText(res.out)).not.toContain("A".repeat(10))
  })
})

describe("the vendored skill keeps its licence", () => {
  it("ships LICENSE.txt (Apache-2.0) beside SKILL.md", async () => {
    const { readFile } = await import("node:fs/promises")
    const text = await readFile(join(VENDORED, "skill-creator/LICENSE.txt"), "utf8")
    expect(text).toContain("Apache License")
    expect(text).toContain("Version 2.0")
  })
})
