import { CapabilityIndex } from "@plugboard/core"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { smallCatalog } from "./fixtures.js"

describe("CapabilityIndex text processing", () => {
  it("splits snake, kebab and camel case, acronyms and their plurals", () => {
    expect(CapabilityIndex.words("get_current_weather")).toEqual(["get", "current", "weather"])
    expect(CapabilityIndex.words("domain-indexer")).toEqual(["domain", "indexer"])
    expect(CapabilityIndex.words("ResearchHelper PDFReader")).toEqual(["research", "helper", "pdf", "reader"])
    expect(CapabilityIndex.words("Fetch PDFs and NFTs")).toEqual(["fetch", "pdf", "and", "nft"])
  })

  it("stems inflections and common suffixes to one form", () => {
    const same = (...ws: Array<string>) => expect(new Set(ws.map(CapabilityIndex.stem)).size).toBe(1)
    same("forecast", "forecasts", "forecasting")
    same("create", "creates", "creating", "creation")
    same("story", "stories")
    same("run", "running")
    expect(CapabilityIndex.stem("bus")).toBe("bus")
    expect(CapabilityIndex.stem("2024")).toBe("2024")
  })

  it("drops stop words and one-letter words", () => {
    expect(CapabilityIndex.tokenize("What is the weather in a city?")).toEqual([
      CapabilityIndex.stem("weather"),
      CapabilityIndex.stem("city")
    ])
  })
})

describe("CapabilityIndex.rank", () => {
  const docs: Array<CapabilityIndex.CapabilityDocument> = [
    {
      name: "weather",
      title: "Weather",
      summary: "Weather lookups via Open-Meteo.",
      whenToUse: [
        "Current weather, temperature, precipitation or wind in any city.",
        "Forecasts for any location."
      ],
      tags: ["weather", "forecast"],
      examples: ["What's the weather in Berlin?", "Do I need an umbrella tomorrow?"]
    },
    {
      name: "calendar",
      title: "Calendar",
      summary: "Read and create calendar events.",
      whenToUse: ["Scheduling a meeting.", "What is on my agenda today."],
      tags: ["calendar", "schedule"],
      examples: ["Book a meeting with Ada tomorrow at 10."]
    },
    {
      name: "github-issues",
      title: "GitHub Issues",
      summary: "Search and file GitHub issues.",
      whenToUse: ["Bug reports against a repository."],
      tags: ["github", "issues"],
      examples: ["Open an issue about the login crash."]
    }
  ]
  const index = CapabilityIndex.make(docs)

  it("ranks the relevant plugin first and leaves out plugins sharing no word", () => {
    expect(CapabilityIndex.rank(index, "will it rain? I need the forecast")[0]?.name).toBe("weather")
    expect(CapabilityIndex.rank(index, "schedule a meeting").map((r) => r.name)).toEqual(["calendar"])
    expect(CapabilityIndex.rank(index, "file a bug in the repo issues tracker")[0]?.name).toBe(
      "github-issues"
    )
    expect(CapabilityIndex.rank(index, "zebra quantum")).toEqual([])
    expect(CapabilityIndex.rank(index, "")).toEqual([])
  })

  it("matches query words the index lacks by prefix (at a discount)", () => {
    expect(CapabilityIndex.rank(index, "calendaring")[0]?.name).toBe("calendar")
    expect(CapabilityIndex.rank(index, "temp")[0]?.name).toBe("weather")
    // Below PREFIX_MIN letters nothing is guessed.
    expect(CapabilityIndex.rank(index, "tem")).toEqual([])
  })

  it("honours limit, returns positive scores best first, ties by name", () => {
    const all = CapabilityIndex.rank(index, "weather meeting issue tomorrow")
    expect(all.length).toBe(3)
    for (let i = 1; i < all.length; i++) expect(all[i - 1]!.score).toBeGreaterThanOrEqual(all[i]!.score)
    expect(CapabilityIndex.rank(index, "weather meeting issue tomorrow", { limit: 2 })).toEqual(
      all.slice(0, 2)
    )
    const twins = CapabilityIndex.make([
      { name: "b", summary: "same words" },
      { name: "a", summary: "same words" }
    ])
    expect(CapabilityIndex.rank(twins, "words").map((r) => r.name)).toEqual(["a", "b"])
  })

  it("counts a word once in whenToUse, however many trigger phrases repeat it", () => {
    const twice = CapabilityIndex.make([
      { name: "a", whenToUse: ["rain rain"] },
      { name: "b", whenToUse: ["rain hail"] },
      { name: "c", summary: "unrelated text here" }
    ])
    const [a, b] = ["a", "b"].map((n) => CapabilityIndex.rank(twice, "rain").find((r) => r.name === n)!)
    expect(a!.score).toBeCloseTo(b!.score, 12)
  })

  it("lets a rare word beat a common one that another plugin repeats in every field", () => {
    const docs: Array<CapabilityIndex.CapabilityDocument> = [
      {
        name: "clock",
        summary: "Today's date and time.",
        whenToUse: ["The user asks for today's date."],
        tags: ["today"],
        examples: ["What is today's date?"]
      },
      {
        name: "weather",
        summary: "Weather lookups.",
        whenToUse: ["Forecasts for today or tomorrow.", 'The user asks "do I need an umbrella".'],
        tags: ["weather"]
      },
      { name: "news", summary: "Today's headlines.", tags: ["news"] },
      { name: "stocks", summary: "Quotes for today.", tags: ["stocks"] },
      { name: "maps", summary: "Directions.", tags: ["maps"] }
    ]
    expect(CapabilityIndex.rank(CapabilityIndex.make(docs), "Do I need an umbrella today?")[0]?.name).toBe(
      "weather"
    )
  })

  it("gives a relevance in [0, 1) in the order of the scores, lowered by words no plugin knows", () => {
    const word = fc.constantFrom("weather", "rain", "meeting", "calendar", "bug", "issue", "zebra", "today")
    const text = fc.array(word, { minLength: 1, maxLength: 6 }).map((ws) => ws.join(" "))
    fc.assert(
      fc.property(text, (query) => {
        const ranked = CapabilityIndex.rank(index, query)
        for (const r of ranked) {
          expect(r.relevance).toBeGreaterThan(0)
          expect(r.relevance).toBeLessThan(1)
        }
        for (let i = 1; i < ranked.length; i++)
          expect(ranked[i - 1]!.relevance).toBeGreaterThanOrEqual(ranked[i]!.relevance)
      })
    )
    const plain = CapabilityIndex.rank(index, "weather forecast")[0]!
    const noisy = CapabilityIndex.rank(index, "weather forecast zebra quantum")[0]!
    expect(noisy.name).toBe(plain.name)
    expect(noisy.score).toBeCloseTo(plain.score, 12)
    expect(noisy.relevance).toBeLessThan(plain.relevance)
  })

  it("weighs a repeated query word by its count, and pays for it once: a runaway repetition stays cheap", () => {
    // Every plugin holds the word: scored per occurrence, 50,000 repeats cost a pass over all
    // 5,000 plugins each (seconds of CPU for one list_capabilities call or one router turn).
    const many = CapabilityIndex.make(
      Array.from({ length: 5000 }, (_, i) => ({
        name: `records-${i}`,
        summary: `Records of kind ${i}.`,
        whenToUse: [`Questions about records of kind ${i}.`]
      }))
    )
    const once = CapabilityIndex.rank(many, "records kind 42")
    const start = performance.now()
    const repeated = CapabilityIndex.rank(many, `${"records kind ".repeat(50_000)}42`)
    const ms = performance.now() - start
    expect(repeated.map((r) => r.name)).toEqual(once.map((r) => r.name))
    expect(repeated[0]!.name).toBe("records-42")
    // Each repeat adds what the word adds once (up to rounding).
    const perWord = (q: string) => CapabilityIndex.rank(many, q).find((r) => r.name === "records-7")!.score
    expect(perWord("records records records kind")).toBeCloseTo(3 * perWord("records") + perWord("kind"), 9)
    expect(ms).toBeLessThan(1000)
  })

  it("indexes a catalog's discoverable plugins only", () => {
    const catalog = smallCatalog()
    const idx = CapabilityIndex.forCatalog(catalog)
    expect(idx.names).not.toContain("credits")
    expect(CapabilityIndex.forCatalog(catalog)).toBe(idx)
    expect(CapabilityIndex.rank(idx, "charge credits")).toEqual([])
  })
})

describe("CapabilityIndex.leaveOneOut", () => {
  it("ranks exactly as an index built without that example", () => {
    const word = fc.constantFrom(
      "weather",
      "rain",
      "meeting",
      "calendar",
      "bug",
      "issue",
      "map",
      "route",
      "note",
      "city"
    )
    const text = fc.array(word, { minLength: 1, maxLength: 5 }).map((ws) => ws.join(" "))
    const doc = fc.record({
      summary: text,
      whenToUse: fc.array(text, { maxLength: 2 }),
      examples: fc.array(text, { minLength: 1, maxLength: 3 })
    })
    fc.assert(
      fc.property(
        fc.array(doc, { minLength: 1, maxLength: 5 }),
        fc.nat(),
        fc.nat(),
        text,
        (raw, pick, ex, query) => {
          const docs = raw.map((d, i) => ({ name: `p${i}`, ...d }))
          const target = docs[pick % docs.length]!
          const e = ex % target.examples.length
          const without = docs.map((d) =>
            d.name === target.name ? { ...d, examples: d.examples.filter((_, j) => j !== e) } : d
          )
          const fast = CapabilityIndex.rank(
            CapabilityIndex.leaveOneOut(CapabilityIndex.make(docs), target.name, e),
            query
          )
          const slow = CapabilityIndex.rank(CapabilityIndex.make(without), query)
          expect(fast.map((r) => r.name)).toEqual(slow.map((r) => r.name))
          fast.forEach((r, i) => {
            expect(r.score).toBeCloseTo(slow[i]!.score, 9)
            expect(r.relevance).toBeCloseTo(slow[i]!.relevance, 9)
          })
        }
      )
    )
  })

  it("names the plugin when the example does not exist", () => {
    const index = CapabilityIndex.make([{ name: "weather", examples: ["rain?"] }])
    expect(() => CapabilityIndex.leaveOneOut(index, "nope", 0)).toThrow("no plugin 'nope'")
    expect(() => CapabilityIndex.leaveOneOut(index, "weather", 1)).toThrow(
      "plugin 'weather' has 1 example(s); there is no example 1."
    )
  })
})

describe("CapabilityIndex.closestNames", () => {
  it("finds typos, partial names and reorderings", () => {
    const names = ["weather", "github-issues", "calendar", "memory", "web-search"]
    expect(CapabilityIndex.closestNames("wether", names, 1)).toEqual(["weather"])
    expect(CapabilityIndex.closestNames("issues_github", names, 1)).toEqual(["github-issues"])
    expect(CapabilityIndex.closestNames("Calendar", names, 1)).toEqual(["calendar"])
    expect(CapabilityIndex.closestNames("search", names, 1)).toEqual(["web-search"])
    expect(CapabilityIndex.closestNames("x", names, 3)).toHaveLength(3)
    expect(CapabilityIndex.closestNames("x", [], 3)).toEqual([])
  })
})

describe("CapabilityIndex: the tools field", () => {
  // A server of many tools whose manifest (derived, or written) names only a few of them.
  const office: CapabilityIndex.CapabilityDocument = {
    name: "office",
    title: "Office",
    summary: "Read and write office documents.",
    whenToUse: ["Editing a Word document.", "Reading a spreadsheet."],
    tags: ["document", "spreadsheet"],
    tools: [
      "read docx Read a Word document as text.",
      "write xlsx Write rows to a spreadsheet.",
      "convert to pdf Convert a document to a PDF file."
    ]
  }
  const printer: CapabilityIndex.CapabilityDocument = {
    name: "printer",
    title: "Printer",
    summary: "Send files to the office printer.",
    whenToUse: ["Printing a file."],
    tags: ["print"]
  }
  const index = CapabilityIndex.make([office, printer])

  it("issue 36 item 19: a request for a tool that no manifest field names finds its plugin", () => {
    expect(CapabilityIndex.rank(index, "convert my report to pdf")[0]?.name).toBe("office")
    // Without the field, nothing in the manifest says "pdf" or "convert".
    const { tools: _, ...bare } = office
    const without = CapabilityIndex.make([bare, printer])
    expect(CapabilityIndex.rank(without, "convert my report to pdf").map((r) => r.name)).not.toContain(
      "office"
    )
  })

  it("issue 36 item 19: the tools field weighs less than the manifest written for routing", () => {
    const loud: CapabilityIndex.CapabilityDocument = {
      name: "loud",
      title: "Loud",
      summary: "Many tools.",
      whenToUse: ["Anything."],
      tools: Array.from({ length: 50 }, (_, i) => `print job ${i} Print a page.`)
    }
    expect(CapabilityIndex.rank(CapabilityIndex.make([loud, printer]), "print a file")[0]?.name).toBe(
      "printer"
    )
  })
})

describe("CapabilityIndex.rank over the words it keeps per index (issue 37)", () => {
  const index = CapabilityIndex.forCatalog(smallCatalog())
  // Known words, words that extend or are extended by indexed ones, unknown words, repeats.
  const vocabulary = [
    ...index.postings.keys(),
    "forecasting",
    "weath",
    "rainfalls",
    "astrolog",
    "zzzz",
    "qq",
    "the",
    "Berlin"
  ]

  it("ranks any sequence of queries as a fresh index does, leave-one-out included", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.array(fc.constantFrom(...vocabulary), { maxLength: 6 }).map((w) => w.join(" ")),
          { minLength: 1, maxLength: 12 }
        ),
        fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
        (queries, limit) => {
          for (const q of queries) {
            // A copy is another index object: nothing kept for it yet.
            expect(CapabilityIndex.rank(index, q, { limit })).toEqual(
              CapabilityIndex.rank({ ...index }, q, { limit })
            )
          }
          const name = index.names.find((_, d) => index.exampleTerms[d]!.length > 0)
          if (name !== undefined) {
            const without = CapabilityIndex.leaveOneOut(index, name, 0)
            for (const q of queries)
              expect(CapabilityIndex.rank(without, q)).toEqual(
                CapabilityIndex.rank(CapabilityIndex.leaveOneOut({ ...index }, name, 0), q)
              )
          }
        }
      )
    )
  })
})
