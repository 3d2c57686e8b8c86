/**
 * The Catalog tab: every plugin by tier, with its manifest, its validation warnings, its tools
 * and their schemas, and what loading it costs; a search box that shows `list_capabilities`'
 * own ranking for a query (core's `CapabilityIndex`, through `GET /console/api/search`). A plugin
 * of an MCP server that signs each user in with OAuth shows whether this user connected it, and a
 * Connect button when not (`POST /connections/:server`, whose URL opens in a new tab; docs/oauth.md).
 */
import { useEffect, useState } from "preact/hooks"
import type { ConsoleCatalog, ConsolePlugin, ConsoleSearch } from "../src/console/Wire.js"
import { type Api, takeToken } from "./api.js"
import { fmt } from "./charts.js"

/** This user's connection to the OAuth server behind a plugin (`GET /connections`). */
interface Connection {
  readonly server: string
  readonly plugin?: string
  readonly connected: boolean
}

const authHeaders = (): Record<string, string> => ({
  authorization: `Bearer ${takeToken() ?? ""}`,
  "x-auth-type": "ucan"
})

/** The user's connections by plugin name; none when the host has no OAuth server (404). */
const loadConnections = async (): Promise<ReadonlyMap<string, Connection>> => {
  const response = await fetch("/connections", { headers: authHeaders() })
  if (!response.ok) return new Map()
  const body = (await response.json()) as { connections: ReadonlyArray<Connection> }
  return new Map(body.connections.flatMap((c) => (c.plugin === undefined ? [] : [[c.plugin, c] as const])))
}

const ConnectButton = (props: { readonly connection: Connection }) => {
  const [note, setNote] = useState<string | undefined>()
  const connect = async (e: Event) => {
    e.preventDefault()
    // Opened before the request, within the click: a window opened after an await may be blocked.
    const tab = window.open("about:blank", "_blank")
    const response = await fetch(`/connections/${encodeURIComponent(props.connection.server)}`, {
      method: "POST",
      headers: authHeaders()
    })
    const body = (await response.json()) as { url?: string; message?: string }
    if (!response.ok || body.url === undefined) {
      tab?.close()
      setNote(body.message ?? `${response.status}`)
      return
    }
    if (tab === null) location.assign(body.url)
    else tab.location.href = body.url
    setNote("Sign in in the new tab, then reload this page.")
  }
  return (
    <span class="connect">
      {" "}
      <button type="button" data-connect={props.connection.server} onClick={(e) => void connect(e)}>
        Connect
      </button>
      {note === undefined ? null : <span class="muted"> {note}</span>}
    </span>
  )
}

const TIERS = ["always", "on-demand", "silent"] as const

const PluginDetails = (props: {
  readonly plugin: ConsolePlugin
  readonly connection?: Connection | undefined
}) => {
  const p = props.plugin
  const c = props.connection
  return (
    <details class="plugin" data-plugin={p.name}>
      <summary>
        <strong>{p.name}</strong> <span class="muted">{p.title}</span>
        {p.costWhenLoaded === null ? null : (
          <span class="cost" data-cost={p.costWhenLoaded}>
            {" "}
            +{fmt(p.costWhenLoaded)} tokens when loaded
          </span>
        )}
        {p.warnings.length > 0 ? <span class="warn"> · {p.warnings.length} warning(s)</span> : null}
        {p.source === "typescript" ? null : <span class="muted"> · {p.source}</span>}
        {c === undefined ? null : c.connected ? (
          <span class="muted" data-connected={c.server}>
            {" "}
            · connected
          </span>
        ) : (
          <>
            <span class="warn" data-needs-connect={c.server}>
              {" "}
              · needs connect
            </span>
            <ConnectButton connection={c} />
          </>
        )}
      </summary>
      {p.unavailable === null ? null : <p role="note">Unavailable: {p.unavailable}</p>}
      {p.warnings.length === 0 ? null : (
        <ul class="warnings">
          {p.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}
      <h4>Tools</h4>
      <ul class="tool-list">
        {p.tools.map((t) => (
          <li key={t.name}>
            <details>
              <summary>
                <code>{t.name}</code>{" "}
                <span class="muted">
                  ({t.visibility}, {fmt(t.tokens)} tokens)
                </span>{" "}
                {t.description}
              </summary>
              <pre>{JSON.stringify(t.parameters, null, 2)}</pre>
            </details>
          </li>
        ))}
      </ul>
      <details>
        <summary>Manifest</summary>
        <pre>{JSON.stringify(p.manifest, null, 2)}</pre>
      </details>
    </details>
  )
}

export const CatalogTab = (props: { readonly api: Api }) => {
  const [catalog, setCatalog] = useState<ConsoleCatalog | undefined>()
  const [query, setQuery] = useState("")
  const [result, setResult] = useState<ConsoleSearch | undefined>()
  const [error, setError] = useState<string | undefined>()
  const [connections, setConnections] = useState<ReadonlyMap<string, Connection>>(new Map())
  useEffect(() => {
    props.api.catalog().then(setCatalog, (e: Error) => setError(e.message))
    loadConnections().then(setConnections, () => setConnections(new Map()))
  }, [props.api])
  const search = async (q: string) => {
    if (q.trim() === "") {
      setResult(undefined)
      return
    }
    try {
      setResult(await props.api.search(q))
      setError(undefined)
    } catch (e) {
      setError((e as Error).message)
    }
  }
  return (
    <div class="catalog">
      <form
        class="search-form"
        onSubmit={(e) => {
          e.preventDefault()
          void search(query)
        }}
      >
        <label for="capability-query">Rank plugins for a query, as list_capabilities does</label>
        <input
          id="capability-query"
          type="search"
          value={query}
          placeholder="e.g. convert 20 euros to dollars"
          onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Search</button>
      </form>
      {error === undefined ? null : <p role="alert">{error}</p>}
      {result === undefined ? null : (
        <section aria-label="Ranking" class="ranking">
          <p>
            {result.total} plugin{result.total === 1 ? "" : "s"} share words with “{result.query}”
            {result.plugins.length < result.total ? ` (first ${result.plugins.length} shown)` : ""}.
          </p>
          <ol data-testid="ranking">
            {result.plugins.map((p) => (
              <li key={p.name} data-plugin={p.name}>
                <strong>{p.name}</strong>{" "}
                <span class="muted">score {(p as { score?: number }).score?.toFixed(2)}</span> — {p.summary}
              </li>
            ))}
          </ol>
        </section>
      )}
      {catalog === undefined ? (
        error === undefined ? (
          <p aria-busy="true">Loading the catalog…</p>
        ) : null
      ) : (
        <>
          <p>
            {catalog.plugins.length} plugins, {catalog.plugins.reduce((n, p) => n + p.tools.length, 0)} tools
            (tokens counted with {catalog.tokenizer}).
          </p>
          {catalog.warnings.length === 0 ? null : (
            <ul class="warnings">
              {catalog.warnings.map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          )}
          {TIERS.map((tier) => {
            const plugins = catalog.plugins.filter((p) => p.visibility === tier)
            return (
              <section key={tier} aria-labelledby={`tier-${tier}`} data-tier={tier}>
                <h2 id={`tier-${tier}`}>
                  {tier} <span class="muted">({plugins.length})</span>
                </h2>
                {plugins.map((p) => (
                  <PluginDetails key={p.name} plugin={p} connection={connections.get(p.name)} />
                ))}
              </section>
            )
          })}
        </>
      )}
    </div>
  )
}
