/**
 * Agent Skills mounted on a real oracle, end to end over HTTP + SSE, driven by the scripted model:
 * `list_capabilities` shows the skills, `load_capability` returns a skill's `SKILL.md` body as its
 * operating guide (the model reads it in the same turn), and the skill's one tool reads a file of
 * its folder, and nothing outside it.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { ToolMessage } from "@langchain/core/messages"
import { ScriptedChatModel, type ScriptStep } from "@plugboard/models"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { collect, newSession, type Running, start, stream, user } from "./helpers.js"
import { answerTo, toolText } from "./mcpHelpers.js"

const SKILLS = join(import.meta.dirname, "..", "..", "..", "examples", "skills")

describe("Agent Skills as plugins, end to end", () => {
  let running: Running
  const seen: Record<string, ToolMessage> = {}
  let offeredAfterLoad: ReadonlyArray<string> = []
  const script: Array<ScriptStep> = [
    { tool: "list_capabilities", args: { query: "release notes changelog" } },
    (t) => {
      seen.list = answerTo(t, "list_capabilities")
      return { tool: "load_capability", args: { names: ["release-notes"] } }
    },
    (t) => {
      seen.load = answerTo(t, "load_capability")
      offeredAfterLoad = t.offeredTools
      return { tool: "release-notes__read_file", args: { path: "references/style-guide.md" } }
    },
    (t) => {
      seen.read = answerTo(t, "release-notes__read_file")
      return { tool: "release-notes__read_file", args: { path: "../csv-cleanup/SKILL.md" } }
    },
    (t) => {
      seen.escape = answerTo(t, "release-notes__read_file")
      return "Here are your release notes."
    }
  ]

  beforeAll(async () => {
    running = await start({ skills: SKILLS, model: ScriptedChatModel.script(script) })
  }, 60_000)
  afterAll(async () => {
    await running?.stop()
  })

  it("lists, loads (the body reaches the model) and reads a file of a skill", async () => {
    const u = await user(running.app.oracleDid)
    const session = await newSession(running.url, u.headers)
    const { events } = await stream(running.url, session, u.headers, "Write release notes for 2.0.")
    const all = await collect(events)
    expect(all.at(-1)?._tag).toBe("done")
    expect(all.filter((e) => e._tag === "error")).toEqual([])

    const listing = JSON.parse(toolText(seen.list!)) as { plugins: Array<{ name: string }> }
    expect(listing.plugins[0]?.name).toBe("release-notes")

    // The body of SKILL.md (after its front matter) is in the load's answer, as the guide.
    const body = readFileSync(join(SKILLS, "release-notes", "SKILL.md"), "utf8")
      .split(/^---$/m)[2]!
      .trim()
    const load = JSON.parse(toolText(seen.load!)) as {
      results: Array<{ status: string; operatingGuide?: string; tools: Array<{ name: string }> }>
    }
    expect(load.results[0]).toMatchObject({ status: "loaded", operatingGuide: body })
    expect(load.results[0]!.tools.map((t) => t.name)).toEqual(["release-notes__read_file"])
    expect(offeredAfterLoad).toContain("release-notes__read_file")

    expect(seen.read!.status).toBe("success")
    const style = readFileSync(join(SKILLS, "release-notes", "references", "style-guide.md"), "utf8")
    expect(toolText(seen.read!)).toContain(style.trim().split("\n")[0]!)
    expect(seen.escape!.status).toBe("error")
    expect(toolText(seen.escape!)).toMatch(/leads out of the skill/)
  }, 60_000)
})
