/**
 * The page's HTML (docs/console.md): whatever the report embedded in it says (plugin names,
 * summaries, queries are the catalog author's text), it reads back exactly as data and never ends
 * its own script element or injects markup.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { inlineJson, page } from "../../src/console/Assets.js"
import { isLoopback } from "../../src/console/ConsoleRoutes.js"

const assets = { js: "window.x = '</script><script>alert(1)</script>'", css: "a::after{content:'</style>'}" }

const embedded = (html: string) =>
  /<script type="application\/json" id="plugboard-report">([\s\S]*?)<\/script>/.exec(html)?.[1]

describe("console page", () => {
  it("embeds any report so that it reads back as the same data", () =>
    fc.assert(
      fc.property(fc.jsonValue(), (data) => {
        const html = page(assets, { title: "t", data })
        const text = embedded(html)
        expect(text).toBeDefined()
        expect(JSON.parse(text!)).toEqual(JSON.parse(JSON.stringify(data)))
        expect(inlineJson(data)).not.toContain("<")
      })
    ))

  it("escapes the title and keeps inline code inside its element", () =>
    fc.assert(
      fc.property(fc.string(), (title) => {
        const html = page(assets, { title })
        const head = html.slice(0, html.indexOf("</head>"))
        expect(head.match(/<\/title>/g)).toHaveLength(1)
        expect(head.match(/<\/style>/g)).toHaveLength(1)
        // The script's own text never closes it early: one closing tag, the last one.
        expect(html.match(/<\/script>/g)).toHaveLength(1)
      })
    ))

  it("counts all of 127.0.0.0/8 as loopback, and no IPv4 address with another first byte", () =>
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
        (b, c, d) => {
          expect(isLoopback(`127.${b}.${c}.${d}`)).toBe(true)
          expect(isLoopback(`${b === 127 ? 128 : b}.${c}.${d}.1`)).toBe(false)
        }
      )
    ))
})
