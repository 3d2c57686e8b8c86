/**
 * `Connect` (a plugin's per-user availability when it needs the user's account): whatever the
 * thread loaded and whatever the model asks, a plugin pending a connection is never loaded and
 * never listed as loaded, its listing and its refusal carry the reason and the link, and every
 * other plugin is listed and loaded exactly as with nothing pending.
 */
import { Catalog, Connect, MetaTools } from "@plugboard/core"
import { Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { smallCatalog, smallPlugins } from "./fixtures.js"

const catalog = smallCatalog()
const discoverable = ["lab", "maps", "memory", "notes", "weather"]
const name = fc.constantFrom(...discoverable, "nope")
const names = fc.uniqueArray(name, { maxLength: 6 })
const asks = fc.uniqueArray(name, { minLength: 1, maxLength: 6 })
const pendingOf = fc
  .uniqueArray(fc.constantFrom(...discoverable), { maxLength: 5 })
  .map(
    (ps): Connect.Pending =>
      new Map(ps.map((p) => [p, { reason: `'${p}' is not connected.`, url: `https://oracle.test/c/${p}` }]))
  )

const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected success, got ${String(e.left)}`)
  return e.right
}

describe("Connect: needs-connect in list_capabilities and load_capability", () => {
  it("a pending plugin is never loaded nor listed loaded; the others are as with nothing pending", () => {
    fc.assert(
      fc.property(pendingOf, names, asks, (pending, loaded, asked) => {
        const load = right(
          MetaTools.loadCapability(catalog, loaded, { names: asked }, [], undefined, pending)
        )
        const plain = right(MetaTools.loadCapability(catalog, loaded, { names: asked }))
        for (const n of load.newlyLoaded) expect(pending.has(n)).toBe(false)
        expect(load.newlyLoaded).toEqual(plain.newlyLoaded.filter((n) => !pending.has(n)))
        load.results.forEach((r, i) => {
          const needs = pending.get(r.name)
          if (needs !== undefined && !loaded.includes(r.name) && r.status === "error") {
            expect(r.error).toBe("needs-connect")
            expect(r.connectUrl).toBe(needs.url)
            expect(r.message).toBe(Connect.loadMessage(r.name, needs))
          } else if (needs === undefined) {
            expect(r).toEqual(plain.results[i])
          }
        })

        const listed = right(MetaTools.listCapabilities(catalog, loaded, {}, undefined, undefined, pending))
        const plainList = right(MetaTools.listCapabilities(catalog, loaded, {}))
        listed.plugins.forEach((p, i) => {
          const needs = pending.get(p.name)
          if (needs === undefined) expect(p).toEqual(plainList.plugins[i])
          else {
            expect(p.needsConnect).toEqual(needs)
            expect(p.loaded).toBe(false)
            expect({ ...p, needsConnect: undefined, loaded: plainList.plugins[i]!.loaded }).toEqual(
              plainList.plugins[i]
            )
          }
        })
      })
    )
  })

  it("load_capability answers a pending plugin with the reason and the link, and loads the rest", () => {
    const pending: Connect.Pending = new Map([
      [
        "notes",
        {
          reason: "MCP server 'notes' is not connected for this user.",
          url: "https://oracle.test/oauth/start?ticket=t"
        }
      ]
    ])
    const r = right(
      MetaTools.loadCapability(catalog, [], { names: ["notes", "weather"] }, [], undefined, pending)
    )
    expect(r.newlyLoaded).toEqual(["weather"])
    expect(r.results[0]).toEqual({
      name: "notes",
      status: "error",
      error: "needs-connect",
      message:
        "Plugin 'notes' needs the user to connect their account first: MCP server 'notes' is not connected for this user. Give the user this link to connect: https://oracle.test/oauth/start?ticket=t , then load 'notes' again.",
      connectUrl: "https://oracle.test/oauth/start?ticket=t",
      suggestions: []
    })
  })

  it("a plugin unavailable for want of its tool list is needs-connect when the pending connect says unlisted; unavailable otherwise", () => {
    const why = "MCP server 'notes' signs each user in with OAuth: no list is cached yet."
    const unlisted = Catalog.unsafeMake(
      smallPlugins().map((p) => (p.name === "notes" ? { ...p, tools: [], unavailable: why } : p))
    )
    const needs = {
      reason: "Not connected; its tools are listed once a user connects.",
      url: "https://oracle.test/c"
    }
    for (const [pending, expected] of [
      [new Map([["notes", { ...needs, unlisted: true }]]), "needs-connect"],
      [new Map([["notes", needs]]), "unavailable"],
      [Connect.NONE, "unavailable"]
    ] as const) {
      const listed = right(MetaTools.listCapabilities(unlisted, [], {}, undefined, undefined, pending))
      const notes = listed.plugins.find((p) => p.name === "notes")!
      const loaded = right(
        MetaTools.loadCapability(unlisted, [], { names: ["notes"] }, [], undefined, pending)
      )
      expect(loaded.newlyLoaded).toEqual([])
      expect(loaded.results[0]).toMatchObject({ status: "error", error: expected })
      if (expected === "needs-connect") {
        expect(notes.needsConnect).toEqual(pending.get("notes"))
        expect(notes.unavailable).toBeUndefined()
        expect(loaded.results[0]).toMatchObject({ connectUrl: needs.url })
      } else {
        expect(notes.needsConnect).toBeUndefined()
        expect(notes.unavailable).toBe(why)
      }
    }
  })
})
