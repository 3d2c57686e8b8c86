/**
 * Skills through core: the specs `loadSkills` returns go through `CatalogSource.toPlugins` and
 * `Catalog.make` into a valid catalog, whose entries carry the guide `load_capability` returns.
 */
import { join } from "node:path"
import { Catalog, CatalogSource, LoadedPlugins, MetaTools, type RuntimeContext } from "@plugboard/core"
import { loadSkills } from "@plugboard/skills"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { answer, EXAMPLES, FIXTURES, goodFront, skillText, tempDir, writeFiles } from "./helpers.js"

const catalogOf = async (dir: string) => {
  const loaded = await loadSkills(dir)
  const derived = CatalogSource.toPlugins(loaded.specs)
  const catalog = Catalog.make(derived.plugins)
  if (Either.isLeft(catalog)) throw new Error(catalog.left.errors.join("\n"))
  return { loaded, derived, catalog: catalog.right }
}

describe("skills in a catalog", () => {
  it("the fixture's good skills make a valid catalog; both read_file tools are namespaced", async () => {
    const { loaded, derived, catalog } = await catalogOf(FIXTURES)
    expect(derived.errors).toEqual([])
    expect(derived.warnings).toEqual([])
    expect(catalog.warnings).toEqual([])
    const where = (e: (typeof catalog.entries)[number]) =>
      e.source === undefined ? undefined : { kind: e.source.kind, path: (e.source as { path: string }).path }
    expect(catalog.entries.map((e) => [e.name, e.visibility, where(e)])).toEqual([
      ["csv-cleanup", "on-demand", { kind: "skill", path: join(FIXTURES, "csv-cleanup") }],
      ["release-notes", "on-demand", { kind: "skill", path: join(FIXTURES, "release-notes") }]
    ])
    for (const entry of catalog.entries) {
      expect(entry.operatingGuide).toBe(loaded.specs.find((s) => s.name === entry.name)!.operatingGuide)
    }
    expect([...catalog.toolsByName.keys()].sort()).toEqual([
      "csv-cleanup__read_file",
      "release-notes__read_file"
    ])
    // The override in metadata.plugboard reached the manifest, and the change is recorded.
    expect(catalog.byName.get("csv-cleanup")!.manifest.category).toBe("data")
    expect(catalog.byName.get("csv-cleanup")!.overrides).toEqual([
      {
        field: "category",
        from: undefined,
        to: "data",
        by: `skill 'csv-cleanup' (${join(FIXTURES, "csv-cleanup")}).manifest`
      }
    ])
  })

  it("the namespaced tool still reads the skill's own file", async () => {
    const { catalog } = await catalogOf(FIXTURES)
    const tool = catalog.toolsByName.get("release-notes__read_file")!
    expect(tool.description).toMatch(/^\[Release Notes\] Reads a file of the 'release-notes' skill/)
    const out = await tool.tool.handler({ path: "references/template.md" }, {} as RuntimeContext)
    expect(answer(out)).toEqual({
      text: "## <version> — <date>\n\n### New\n- <change> (#<n>)\n",
      isError: false
    })
  })

  it("load_capability returns the skill's body as its operating guide, with its tool", async () => {
    const { catalog } = await catalogOf(FIXTURES)
    const result = MetaTools.loadCapability(catalog, LoadedPlugins.empty, { names: ["release-notes"] })
    if (Either.isLeft(result)) throw new Error(result.left.message)
    expect(result.right.results).toMatchObject([
      {
        name: "release-notes",
        status: "loaded",
        operatingGuide: expect.stringContaining("Group the changes under Breaking, New, Fixed"),
        tools: [{ name: "release-notes__read_file" }]
      }
    ])
  })

  it("a lone skill's tool keeps the name read_file (core namespaces only on a collision)", async () => {
    const root = await tempDir()
    await writeFiles(root, { "solo/SKILL.md": skillText(goodFront("solo")), "solo/ref.md": "Ref." })
    const { catalog } = await catalogOf(root)
    expect([...catalog.toolsByName.keys()]).toEqual(["read_file"])
  })

  it("a malformed metadata.plugboard is core's error, naming the skill's folder", async () => {
    const root = await tempDir()
    await writeFiles(root, {
      "odd/SKILL.md": skillText(`${goodFront("odd")}\nmetadata:\n  plugboard:\n    category: nope`)
    })
    const { specs } = await loadSkills(root)
    const { errors } = CatalogSource.toPlugins(specs)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toContain(`skill 'odd' (${join(root, "odd")}).manifest.category must be one of`)
  })

  it("the example skills load without an error or a warning", async () => {
    const { loaded, derived, catalog } = await catalogOf(EXAMPLES)
    expect(loaded.errors).toEqual([])
    expect(loaded.warnings).toEqual([])
    expect(derived.warnings).toEqual([])
    expect(catalog.warnings).toEqual([])
    expect(catalog.entries.map((e) => e.name)).toEqual(["csv-cleanup", "release-notes"])
    for (const entry of catalog.entries) {
      expect(entry.operatingGuide?.length).toBeGreaterThan(500)
      expect(entry.tools).toHaveLength(1)
    }
  })
})
