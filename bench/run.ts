/**
 * `pnpm bench [name...]`: runs every `bench/*.bench.ts` (or the named ones) in one process, one
 * after another, so that figures compared against each other come from the same run.
 */
import { readdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const wanted = process.argv.slice(2)
const files = readdirSync(here)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.startsWith(w)))
  .sort()

if (files.length === 0) {
  console.error(`no benchmark matches ${wanted.join(", ")}`)
  process.exit(1)
}
for (const file of files) {
  console.log(`\n=== ${file}`)
  const mod = (await import(pathToFileURL(join(here, file)).href)) as { default: () => Promise<void> }
  await mod.default()
}
