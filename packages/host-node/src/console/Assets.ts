/**
 * The dev console's page: one HTML document with its script and stylesheet inline, so it needs
 * no other request and no network (docs/console.md). The same page, given a report, is
 * `plugboard inspect --html`. The script is bundled at build time (`pnpm build` writes
 * `dist/console/console.bundle.{js,css}` beside this module); running from source there is no
 * such file, and the bundle is built into memory on first use with esbuild (a devDependency).
 */
import { readFile } from "node:fs/promises"
import { fileURLToPath, pathToFileURL } from "node:url"
import { describe } from "@plugboard/core"

/** The bundled page code. */
export interface ConsoleAssets {
  readonly js: string
  readonly css: string
}

let assets: Promise<ConsoleAssets> | undefined

const built = async (): Promise<ConsoleAssets | undefined> => {
  try {
    const [js, css] = await Promise.all([
      readFile(new URL("./console.bundle.js", import.meta.url), "utf8"),
      readFile(new URL("./console.bundle.css", import.meta.url), "utf8")
    ])
    return { js, css }
  } catch {
    return undefined
  }
}

const fromSource = async (): Promise<ConsoleAssets> => {
  const script = fileURLToPath(new URL("../../console-ui/bundle.mjs", import.meta.url))
  let mod: { bundle: () => Promise<ConsoleAssets> }
  try {
    mod = await import(pathToFileURL(script).href)
  } catch (error) {
    throw new Error(
      `The console's page is not built (no console.bundle.js beside ${fileURLToPath(import.meta.url)}) and cannot be built here: ${describe(error)}. Run pnpm build.`
    )
  }
  return mod.bundle()
}

/** The page's script and stylesheet: the built files, else bundled once into memory. */
export const load = (): Promise<ConsoleAssets> => {
  assets ??= built().then((b) => b ?? fromSource())
  // A failed build is retried on the next request rather than cached.
  assets.catch(() => {
    assets = undefined
  })
  return assets
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

// Inline code must not close its own element early.
const inlineScript = (js: string) => js.replace(/<\/(script)/gi, "<\\/$1").replace(/<!--/g, "<\\!--")

/** JSON inside `<script type="application/json">`: `<` escaped so no markup can end it. */
export const inlineJson = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c")

/**
 * The HTML document. `data` (the report of `inspect --html`) is embedded for the page to read
 * instead of calling the API.
 */
export const page = (
  a: ConsoleAssets,
  options: { readonly title: string; readonly data?: unknown }
): string =>
  [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    // Nothing but this document's own code runs, and it talks only to the server it came from.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'">`,
    '<meta name="referrer" content="no-referrer">',
    `<title>${escapeHtml(options.title)}</title>`,
    `<style>${a.css.replace(/<\/(style)/gi, "<\\/$1")}</style>`,
    "</head>",
    "<body>",
    '<div id="app"></div>',
    options.data === undefined
      ? ""
      : `<script type="application/json" id="plugboard-report">${inlineJson(options.data)}</script>`,
    `<script>${inlineScript(a.js)}</script>`,
    "</body>",
    "</html>",
    ""
  ].join("\n")
