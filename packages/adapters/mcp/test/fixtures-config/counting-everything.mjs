// server-everything over stdio, counting its starts: each start appends a line to the file named
// by the first argument, so a test can tell whether a boot spawned the server or used its cache.
import { appendFileSync } from "node:fs"

const counter = process.argv[2]
if (counter === undefined) throw new Error("usage: counting-everything.mjs <counter file>")
appendFileSync(counter, `${process.pid}\n`)
// server-everything picks its transport from argv[2].
process.argv = [process.argv[0], process.argv[1], "stdio"]
await import(
  new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url).href
)
