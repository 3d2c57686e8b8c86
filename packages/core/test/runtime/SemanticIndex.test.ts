import { CapabilityIndex, Embedder, MetaTools, SemanticIndex } from "@plugboard/core"
import { Effect, Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { smallCatalog } from "./fixtures.js"

const cos = (a: Float32Array, b: Float32Array) => {
  let d = 0
  let x = 0
  let y = 0
  for (let i = 0; i < a.length; i++) {
    d += a[i]! * b[i]!
    x += a[i]! * a[i]!
    y += b[i]! * b[i]!
  }
  return d / Math.sqrt(x * y)
}

const embed = (texts: ReadonlyArray<string>, dimensions = 256) =>
  Effect.runSync(Embedder.hashing(dimensions).embed(texts))

describe("Embedder.hashing", () => {
  it("gives texts with the same words the same vector, and unrelated texts none in common", () => {
    const [a, b, c] = embed([
      "Weather forecast for Berlin",
      "berlin: the forecasts of weather",
      "zebra xylophone"
    ])
    expect(cos(a!, b!)).toBeCloseTo(1, 6)
    expect(cos(a!, c!)).toBeLessThan(0.5)
    expect(a!.length).toBe(256)
  })

  it("refuses a dimension that is not a positive integer", () => {
    expect(() => Embedder.hashing(0)).toThrow(/positive integer/)
    expect(() => Embedder.hashing(2.5)).toThrow(/positive integer/)
  })
})

describe("SemanticIndex", () => {
  const catalog = smallCatalog()
  const lexical = CapabilityIndex.forCatalog(catalog)
  const index = Effect.runSync(SemanticIndex.forCatalog(catalog).pipe(Effect.provide(Embedder.layerHashing)))

  it("indexes the discoverable plugins only, one unit vector each", () => {
    expect(index.lexical.names).toEqual(lexical.names)
    expect(index.lexical.names).not.toContain("credits")
    expect(index.embedder).toBe("hashing-256")
    for (const v of index.vectors) expect(cos(v, v)).toBeCloseTo(1, 5)
  })

  it("embeds a plugin from its title, summary, whenToUse, tags and examples, its name only when it has nothing else", () => {
    const text = SemanticIndex.documentText(
      SemanticIndex.documentsOf(catalog).find((d) => d.name === "weather")!
    )
    expect(text).toBe(
      "Weather. Weather lookups via Open-Meteo. Whenever asked about current weather, temperature, rain or wind in a city. weather, forecast. What's the weather in Berlin?"
    )
    expect(SemanticIndex.documentText({ name: "bare" })).toBe("bare")
    expect(SemanticIndex.documentText({ name: "untitled", summary: "Says things." })).toBe("Says things.")
  })

  it("ranks every plugin, score = relevance + WEIGHT × similarity, best first", () => {
    const ranked = Effect.runSync(
      SemanticIndex.rankWith(index, "rain in Berlin tomorrow?").pipe(Effect.provide(Embedder.layerHashing))
    )
    expect(ranked.map((r) => r.name).sort()).toEqual([...lexical.names].sort())
    expect(ranked[0]!.name).toBe("weather")
    for (const r of ranked) expect(r.score).toBeCloseTo(r.relevance + SemanticIndex.WEIGHT * r.similarity, 12)
    const lexicalWeather = CapabilityIndex.rank(lexical, "rain in Berlin tomorrow?").find(
      (r) => r.name === "weather"
    )
    expect(ranked[0]!.relevance).toBe(lexicalWeather!.relevance)
  })

  it("respects a limit", () => {
    const [q] = embed(["routes between places"])
    const ranked = Either.getOrThrow(SemanticIndex.rank(index, "routes between places", q!, { limit: 2 }))
    expect(ranked).toHaveLength(2)
    expect(ranked[0]!.name).toBe("maps")
  })

  it("fails with invalid-output on vectors of the wrong number, size or values", () => {
    const ok = embed(lexical.names.map((n) => n))
    const reason = (e: Either.Either<unknown, Embedder.EmbedderError>) =>
      Either.isLeft(e) ? `${e.left.reason}: ${e.left.message}` : "ok"
    expect(reason(SemanticIndex.make(lexical, ok.slice(1), "t"))).toMatch(
      /^invalid-output: expected \d+ plugin vectors/
    )
    expect(reason(SemanticIndex.make(lexical, [ok[0]!, new Float32Array(3), ...ok.slice(2)], "t"))).toMatch(
      /vector of 3 numbers, the others have 256/
    )
    expect(reason(SemanticIndex.make(lexical, [new Float32Array(256), ...ok.slice(1)], "t"))).toMatch(
      /all zeros/
    )
    const nan = new Float32Array(256).fill(Number.NaN)
    expect(reason(SemanticIndex.make(lexical, [nan, ...ok.slice(1)], "t"))).toMatch(/non-finite/)
    expect(reason(SemanticIndex.rank(index, "x", new Float32Array(5)))).toMatch(
      /query vector of 5 numbers, the plugins' have 256/
    )
    expect(reason(SemanticIndex.rank(index, "x", new Float32Array(256)))).toMatch(
      /query: the vector is all zeros/
    )
  })

  it("with identical plugin vectors, orders as the lexical ranking does (property)", () => {
    const same = lexical.names.map(() => Float32Array.from([1, 2, 3]))
    const flat = Either.getOrThrow(SemanticIndex.make(lexical, same, "flat"))
    const words = [
      "weather",
      "rain",
      "route",
      "places",
      "notes",
      "memory",
      "experiment",
      "berlin",
      "quick",
      "zzz"
    ]
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 6 }), (ws) => {
        const query = ws.join(" ")
        const fused = Either.getOrThrow(SemanticIndex.rank(flat, query, Float32Array.from([3, 1, 2])))
        const matched = fused.filter((r) => r.relevance > 0).map((r) => r.name)
        expect(matched).toEqual(CapabilityIndex.rank(lexical, query).map((r) => r.name))
      })
    )
  })

  it("is sorted by score for any query vector (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: 256, maxLength: 256 }),
        (xs) => {
          fc.pre(xs.some((x) => x !== 0))
          const ranked = Either.getOrThrow(SemanticIndex.rank(index, "weather notes", Float32Array.from(xs)))
          for (let i = 1; i < ranked.length; i++)
            expect(ranked[i - 1]!.score).toBeGreaterThanOrEqual(ranked[i]!.score)
          for (const r of ranked) expect(Math.abs(r.similarity)).toBeLessThanOrEqual(1)
        }
      ),
      { numRuns: 50 }
    )
  })

  it("gives list_capabilities its order, still filtered by category and limit", () => {
    const query = "directions to the station"
    const ranked = Effect.runSync(
      SemanticIndex.rankWith(index, query).pipe(Effect.provide(Embedder.layerHashing))
    )
    const listed = Either.getOrThrow(MetaTools.listCapabilities(catalog, [], { query }, undefined, ranked))
    expect(listed.plugins.map((p) => p.name)).toEqual(ranked.map((r) => r.name))
    expect(listed.total).toBe(ranked.length)
    expect(listed.plugins[0]!.name).toBe("maps")
    const data = Either.getOrThrow(
      MetaTools.listCapabilities(catalog, [], { query, category: "data", limit: 1 }, undefined, ranked)
    )
    expect(data.plugins.map((p) => p.name)).toEqual(["maps"])
    expect(data.total).toBe(2)
    // Lexically only maps shares a word with the query; the fused ranking lists every plugin.
    expect(Either.getOrThrow(MetaTools.listCapabilities(catalog, [], { query })).total).toBe(1)
  })
})
