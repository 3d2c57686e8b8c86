/**
 * inspect counts with the adapters' `cachedCounter` (its own properties are tested next to it,
 * packages/adapters/tokenizers/test/PieceCache.test.ts). Here: on what inspect actually counts —
 * every tool name, description and schema, and every manifest, of real-shaped catalogs — the
 * cached totals are the plain counter's.
 */

import { Catalog } from "@plugboard/core"
import { loadTiktokenCounter } from "@plugboard/tokenizers"
import { describe, expect, it } from "vitest"
import { cachedCounter } from "../../src/inspect/index.js"
import { generatedPlugin } from "./fixtures/large-catalog.js"
import { plugins as overBudget } from "./fixtures/over-budget.js"

describe("cachedCounter on inspect's texts", () => {
  for (const encoding of ["o200k", "cl100k"] as const) {
    it(`counts every tool name, description and schema of real-shaped catalogs exactly (${encoding})`, async () => {
      const plain = await loadTiktokenCounter(encoding)
      const cached = cachedCounter(plain)
      const catalog = Catalog.unsafeMake([
        ...overBudget,
        ...Array.from({ length: 200 }, (_, i) => generatedPlugin(i))
      ])
      let a = 0
      let b = 0
      for (const e of catalog.entries) {
        for (const t of e.tools) {
          for (const s of [t.name, t.description, JSON.stringify(t.parameters)]) {
            a += plain.count(s)
            b += cached.count(s)
          }
        }
        a += plain.count(JSON.stringify(e.manifest))
        b += cached.count(JSON.stringify(e.manifest))
      }
      expect(b).toBe(a)
      expect(a).toBeGreaterThan(10_000)
    })
  }
})
