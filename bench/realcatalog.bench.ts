/**
 * `pnpm bench realcatalog`: routing on a catalog of real MCP servers, mounted as a user would mount
 * them (an MCP config, no manifest overrides), against requests written from each server's
 * documented purpose before any ranking was run (`realcatalog/requests.json`; issue 36, item 19).
 *
 * The servers are the pinned npm and PyPI packages `scripts/mcp-servers.sh` installs (into
 * `MCP_SERVERS_DIR`, default `.plugboard/mcp-servers`); each runs offline, and each is asked only
 * for its tool list. Every derived manifest goes through the host's own boot (`loadSources`, then
 * `Catalog.make`), so what is ranked is what `list_capabilities` would rank.
 *
 * A request is routed right when its top plugin (recall@1), or one of its first five (recall@5), is
 * one of the plugins it names (a file request may rightly go to `filesystem` or
 * `desktop-commander`). Reported for the lexical ranking (`CapabilityIndex`, what
 * `list_capabilities` ranks without an embedder) and the fused one (`SemanticIndex`, with the
 * embedding model of `scripts/embedding-model.sh` or `EMBEDDING_MODEL`). Skipped, saying why, when
 * the servers are not installed; fails when fewer than 15 mount.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { CapabilityIndex, Catalog, Embedder, SemanticIndex } from "@plugboard/core"
import * as OnnxEmbedder from "@plugboard/embeddings"
import { Effect, Either } from "effect"
import { loadSources } from "../packages/host-node/src/Sources.js"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..")
const SERVERS = process.env.MCP_SERVERS_DIR || join(root, ".plugboard", "mcp-servers")
const MODEL = process.env.EMBEDDING_MODEL || join(root, ".plugboard", "models", "all-MiniLM-L6-v2-int8")
const MIN_SERVERS = 15

interface Request {
  readonly query: string
  readonly plugins: ReadonlyArray<string>
}

interface ServerEntry {
  readonly command: string
  readonly args?: ReadonlyArray<string>
  readonly env?: Record<string, string>
}

/** The MCP config of the installed servers; the folders they are given live in `work`. */
const serversConfig = (work: string): Record<string, ServerEntry> => {
  const bin = (name: string) => join(SERVERS, "npm", "node_modules", ".bin", name)
  const py = (pkg: string, name: string) => join(SERVERS, "pypi", pkg, "bin", name)
  const files = join(work, "files")
  const repo = join(work, "repo")
  mkdirSync(files, { recursive: true })
  execFileSync("git", ["init", "--quiet", repo])
  return {
    filesystem: { command: bin("mcp-server-filesystem"), args: [files] },
    memory: { command: bin("mcp-server-memory"), env: { MEMORY_FILE_PATH: join(work, "memory.jsonl") } },
    everything: { command: bin("mcp-server-everything"), args: ["stdio"] },
    "sequential-thinking": { command: bin("mcp-server-sequential-thinking") },
    github: { command: bin("mcp-server-github"), env: { GITHUB_PERSONAL_ACCESS_TOKEN: "offline" } },
    postgres: { command: bin("mcp-server-postgres"), args: ["postgresql://127.0.0.1:9/offline"] },
    "desktop-commander": { command: bin("desktop-commander") },
    playwright: { command: bin("playwright-mcp"), args: ["--headless"] },
    kubernetes: { command: bin("mcp-server-kubernetes") },
    chart: { command: bin("mcp-server-chart") },
    "pdf-reader": { command: bin("pdf-reader-mcp") },
    notion: { command: bin("notion-mcp-server"), env: { NOTION_TOKEN: "offline" } },
    time: { command: py("mcp-server-time", "mcp-server-time") },
    git: { command: py("mcp-server-git", "mcp-server-git"), args: ["--repository", repo] },
    fetch: { command: py("mcp-server-fetch", "mcp-server-fetch") },
    sqlite: {
      command: py("mcp-server-sqlite", "mcp-server-sqlite"),
      args: ["--db-path", join(work, "db.sqlite")]
    },
    calculator: { command: py("mcp-server-calculator", "mcp-server-calculator") },
    excel: { command: py("excel-mcp-server", "excel-mcp-server"), args: ["stdio"] },
    word: { command: py("office-word-mcp-server", "word_mcp_server") },
    arxiv: {
      command: py("arxiv-mcp-server", "arxiv-mcp-server"),
      args: ["--storage-path", join(work, "papers")]
    }
  }
}

/** recall@1 and recall@5 of a ranking over the requests. */
const quality = (requests: ReadonlyArray<Request>, rank: (q: string) => ReadonlyArray<string>) => {
  let at1 = 0
  let at5 = 0
  for (const r of requests) {
    const ranked = rank(r.query)
    if (r.plugins.includes(ranked[0] ?? "")) at1++
    if (ranked.slice(0, 5).some((name) => r.plugins.includes(name))) at5++
  }
  return { at1: at1 / requests.length, at5: at5 / requests.length }
}

const row = (label: string, q: { at1: number; at5: number }) =>
  `${label.padEnd(34)} recall@1 ${q.at1.toFixed(3)}   recall@5 ${q.at5.toFixed(3)}`

export default async function realCatalog(): Promise<void> {
  if (!existsSync(join(SERVERS, "npm")) || !existsSync(join(SERVERS, "pypi"))) {
    console.log(`skipped: the servers are not installed in ${SERVERS} (run scripts/mcp-servers.sh)`)
    return
  }
  const { requests } = JSON.parse(readFileSync(join(here, "realcatalog", "requests.json"), "utf8")) as {
    requests: ReadonlyArray<Request>
  }
  const work = mkdtempSync(join(tmpdir(), "plugboard-realcatalog-"))
  try {
    const config = join(work, "servers.json")
    const servers = serversConfig(work)
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: Object.fromEntries(
          Object.entries(servers).map(([name, s]) => [name, { ...s, timeoutMs: 60_000 }])
        )
      })
    )
    const started = performance.now()
    const sources = await loadSources([], { mcpServers: config, cwd: work, cacheDir: join(work, "cache") })
    await sources.close()
    const built = Catalog.make(sources.plugins)
    if (Either.isLeft(built)) throw new Error(`the catalog did not boot:\n${built.left.lines.join("\n")}`)
    const catalog = built.right
    const mounted = catalog.entries.filter((e) => e.unavailable === undefined).map((e) => e.name)
    const missing = Object.keys(servers).filter((name) => !mounted.includes(name))
    console.log(
      `${mounted.length} of ${Object.keys(servers).length} servers mounted, ${catalog.toolsByName.size} tools, in ${((performance.now() - started) / 1000).toFixed(1)} s` +
        (missing.length > 0 ? ` (not mounted: ${missing.join(", ")})` : "")
    )
    for (const line of sources.errors) console.log(`  ${line.slice(0, 300)}`)
    for (const e of catalog.entries)
      if (e.unavailable !== undefined) console.log(`  ${e.name}: ${e.unavailable.slice(0, 300)}`)
    if (mounted.length < MIN_SERVERS)
      throw new Error(`only ${mounted.length} servers mounted; the benchmark needs at least ${MIN_SERVERS}`)
    // A request for a server that did not mount is not routable: it is left out, and said.
    const routable = requests.filter((r) => r.plugins.some((p) => mounted.includes(p)))
    console.log(`${routable.length} of ${requests.length} requests (for the servers mounted)`)

    // REALCATALOG_SHOW=1 prints what is ranked: each derived manifest, as list_capabilities reads it.
    if (process.env.REALCATALOG_SHOW === "1")
      for (const e of catalog.entries) console.log(JSON.stringify({ name: e.name, ...e.manifest }, null, 1))
    const lexical = CapabilityIndex.forCatalog(catalog)
    // REALCATALOG_MISSES=1 prints each request the lexical ranking does not put first, with its top 3.
    if (process.env.REALCATALOG_MISSES === "1")
      for (const r of routable) {
        const top = CapabilityIndex.rank(lexical, r.query).map((x) => x.name)
        if (!r.plugins.includes(top[0] ?? ""))
          console.log(`  miss: ${r.query} → ${top.slice(0, 3).join(", ")} (wanted ${r.plugins.join(" or ")})`)
      }
    console.log(
      row(
        "lexical (CapabilityIndex)",
        quality(routable, (q) => CapabilityIndex.rank(lexical, q).map((r) => r.name))
      )
    )

    if (!existsSync(MODEL)) {
      console.log(`fused: skipped, no embedding model at ${MODEL} (scripts/embedding-model.sh)`)
      return
    }
    const fused = await Effect.runPromise(
      Effect.gen(function* () {
        const embedder = yield* Embedder.Embedder
        const semantic = yield* SemanticIndex.forCatalog(catalog)
        const vectors = yield* embedder.embed(routable.map((r) => r.query))
        return new Map(
          routable.map((r, i) => [
            r.query,
            Effect.runSync(SemanticIndex.rank(semantic, r.query, vectors[i]!)).map((x) => x.name)
          ])
        )
      }).pipe(Effect.provide(OnnxEmbedder.layer({ directory: MODEL })))
    )
    if (process.env.REALCATALOG_MISSES === "1")
      for (const r of routable) {
        const top = fused.get(r.query)!
        if (!r.plugins.includes(top[0] ?? ""))
          console.log(
            `  fused miss: ${r.query} → ${top.slice(0, 3).join(", ")} (wanted ${r.plugins.join(" or ")})`
          )
      }
    console.log(
      row(
        `fused (SemanticIndex, w ${SemanticIndex.WEIGHT})`,
        quality(routable, (q) => fused.get(q)!)
      )
    )
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
