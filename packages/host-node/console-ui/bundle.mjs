/**
 * Bundles the dev console's page (main.tsx: Preact, inline SVG charts) into one script and one
 * stylesheet with esbuild. `pnpm build` runs it as `node console-ui/bundle.mjs <outdir>` and the
 * server reads the files it writes (dist/console/); running from source, the server imports this
 * module and bundles into memory on the first request (docs/console.md).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const here = fileURLToPath(new URL(".", import.meta.url))

/** The page's script and stylesheet, minified. */
export const bundle = async () => {
  const esbuild = await import("esbuild")
  const result = await esbuild.build({
    entryPoints: [join(here, "main.tsx")],
    bundle: true,
    minify: true,
    format: "iife",
    target: ["chrome110", "firefox110", "safari16"],
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    write: false,
    outdir: "out",
    logLevel: "silent"
  })
  const text = (ext) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? ""
  return { js: text(".js"), css: text(".css") }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outdir = process.argv[2]
  if (outdir === undefined) {
    process.stderr.write("Usage: node console-ui/bundle.mjs <outdir>\n")
    process.exit(64)
  }
  const { js, css } = await bundle()
  mkdirSync(outdir, { recursive: true })
  writeFileSync(join(outdir, "console.bundle.js"), js)
  writeFileSync(join(outdir, "console.bundle.css"), css)
  process.stdout.write(`console bundle: ${js.length} + ${css.length} bytes → ${outdir}\n`)
}
