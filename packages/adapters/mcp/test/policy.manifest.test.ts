/**
 * Issue 36, item 13: a server's `tools.deny` (and `tools.allow`) removes the tools from what the
 * model reads about the plugin, not only from what it may call. Real servers over stdio, mounted
 * from a config the way every host mounts them, through core's `toPlugins` into a catalog.
 */
import { Catalog, CatalogSource, type PluginManifest } from "@plugboard/core"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type MountedMcpServers, mountMcpServers } from "../src/Mount.js"
import { pagedFixture, stdioFixture } from "./fixtures/servers.js"
import { tempDir } from "./fixtures-config/helpers.js"

/** Every word of a manifest the model reads about a plugin, lowercased. */
const readable = (m: PluginManifest): string =>
  [m.summary, ...(m.whenToUse ?? []), ...(m.tags ?? [])].join(" | ").toLowerCase()

describe("a policy over a real MCP server's tools", () => {
  let dir: string
  let cleanup: () => Promise<void>
  let mounted: MountedMcpServers
  beforeAll(async () => {
    ;({ dir, cleanup } = await tempDir())
    mounted = await mountMcpServers(
      {
        mcpServers: {
          // Instructions of one sentence: `whenToUse` comes from the tool descriptions, tags from their names.
          fixture: {
            command: process.execPath,
            args: [stdioFixture],
            timeoutMs: 20_000,
            tools: { deny: ["crash", "hang", "bad_result"] }
          },
          // No instructions: the summary lists the tools.
          paged: {
            command: process.execPath,
            args: [pagedFixture],
            timeoutMs: 20_000,
            tools: { deny: ["second"] }
          },
          allowed: {
            command: process.execPath,
            args: [pagedFixture],
            timeoutMs: 20_000,
            tools: { allow: ["third"] }
          }
        }
      },
      { cacheDir: dir }
    )
    expect(mounted.errors).toEqual([])
  })
  afterAll(async () => {
    await mounted?.close()
    await cleanup?.()
  })

  it("issue 36 item 13: denied tools are named nowhere in the derived manifest (summary, whenToUse, tags), and allow keeps only the allowed", () => {
    const derived = CatalogSource.toPlugins(mounted.specs)
    expect(derived.errors).toEqual([])
    const made = Catalog.make(derived.plugins)
    if (Either.isLeft(made)) throw new Error(made.left.errors.join("\n"))
    const catalog = made.right
    const manifest = (name: string) => catalog.byName.get(name)!.manifest
    const tools = (name: string) => catalog.byName.get(name)!.tools.map((t) => t.name)

    // The server still lists what was denied: the policy, not the server, removed them.
    const fixture = mounted.specs.find((s) => s.name === "fixture")!
    expect(fixture.tools.map((t) => t.name)).toEqual(expect.arrayContaining(["crash", "hang", "bad_result"]))

    expect(tools("fixture")).not.toContain("crash")
    const f = readable(manifest("fixture"))
    for (const word of ["crash", "hang", "bad", "exits the process", "never answers", "content block"])
      expect(f).not.toContain(word)
    // What remains is still described.
    expect(manifest("fixture").whenToUse).toContain("The server's process id.")
    expect(manifest("fixture").tags).toContain("whoami")

    expect(tools("paged")).not.toContain("second")
    const p = manifest("paged")
    expect(p.summary).toBe("Paged Fixture: first, third.")
    expect(readable(p)).not.toContain("second")
    expect(p.whenToUse).not.toContain("two")
    expect(p.summary).toContain("first")

    const a = manifest("allowed")
    // `third` is a tool of `paged` too: both are namespaced.
    expect(tools("allowed")).toEqual(["allowed__third"])
    expect(a.summary).toBe("Paged Fixture: third.")
    expect(readable(a)).not.toMatch(/first|second/)
  })
})
