/** The in-memory LoadedPluginsStore against the port's conformance suite, and its key rule. */
import { LoadedPluginsStore } from "@plugboard/core"
import { LoadedPluginsStoreConformance } from "@plugboard/testing"
import { describe, expect, it } from "vitest"

LoadedPluginsStoreConformance.run("memory", () => LoadedPluginsStore.layerMemory)

describe("LoadedPluginsStore.keyProblem", () => {
  it("accepts the keys a URL, a header and a command line carry; says what a key is otherwise", () => {
    for (const key of ["a", "work", "team.alpha", "user:42", "2026-11-30_x", "x".repeat(128)]) {
      expect(LoadedPluginsStore.keyProblem(key)).toBeUndefined()
    }
    expect(LoadedPluginsStore.keyProblem("a b")).toBe(
      `a thread key is 1 to 128 characters (letters, digits, '.', '_', ':' and '-', starting with a letter or a digit); got "a b"`
    )
    expect(LoadedPluginsStore.keyProblem("y".repeat(300))).toContain(`(300 characters)`)
    expect(LoadedPluginsStore.keyProblem(undefined)).toBe("a thread key must be a string, got undefined")
  })
})
