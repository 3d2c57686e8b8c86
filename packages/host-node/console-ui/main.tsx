/**
 * The dev console's page (docs/console.md): four tabs over the server's authenticated API —
 * Chat, Catalog, Budget, Sessions. Opened by `plugboard inspect --html`, the same code shows
 * the report embedded in the page instead, with no network at all.
 */
import { render } from "preact"
import { useEffect, useMemo, useRef, useState } from "preact/hooks"
import type { ConsoleBudget } from "../src/console/Wire.js"
import { type Api, client, keepToken, takeToken } from "./api.js"
import { CatalogTab } from "./catalog.js"
import { BudgetCharts } from "./charts.js"
import { ChatTab } from "./chat.js"
import { SessionsTab } from "./sessions.js"
import "./styles.css"

/** The first render is on screen: tests wait for it, `pnpm bench console` times it. */
const markReady = () => {
  performance.mark("plugboard-ready")
  document.documentElement.dataset.ready = "true"
}

const TABS = ["Chat", "Catalog", "Budget", "Sessions"] as const
type Tab = (typeof TABS)[number]

/** Tabs as WAI-ARIA describes them: arrow keys, Home and End move between tabs. */
const TabList = (props: { readonly tab: Tab; readonly onSelect: (tab: Tab) => void }) => {
  const refs = useRef<Array<HTMLButtonElement | null>>([])
  const onKey = (event: KeyboardEvent, i: number) => {
    const moves: Record<string, number> = {
      ArrowRight: (i + 1) % TABS.length,
      ArrowLeft: (i - 1 + TABS.length) % TABS.length,
      Home: 0,
      End: TABS.length - 1
    }
    const next = moves[event.key]
    if (next === undefined) return
    event.preventDefault()
    props.onSelect(TABS[next]!)
    refs.current[next]?.focus()
  }
  return (
    <div role="tablist" aria-label="Console sections" class="tabs">
      {TABS.map((t, i) => (
        <button
          key={t}
          ref={(el) => {
            refs.current[i] = el
          }}
          type="button"
          role="tab"
          id={`tab-${t}`}
          aria-selected={props.tab === t}
          aria-controls={`panel-${t}`}
          tabIndex={props.tab === t ? 0 : -1}
          onClick={() => props.onSelect(t)}
          onKeyDown={(e) => onKey(e, i)}
        >
          {t}
        </button>
      ))}
    </div>
  )
}

const BudgetTab = (props: { readonly api: Api }) => {
  const [report, setReport] = useState<ConsoleBudget | undefined>()
  const [error, setError] = useState<string | undefined>()
  useEffect(() => {
    props.api.budget().then(setReport, (e: Error) => setError(e.message))
  }, [props.api])
  if (error !== undefined) return <p role="alert">{error}</p>
  if (report === undefined) return <p aria-busy="true">Counting tokens and ranking every example…</p>
  return <BudgetCharts report={report} />
}

const TokenForm = (props: { readonly onToken: (token: string) => void }) => {
  const [value, setValue] = useState("")
  return (
    <form
      class="token"
      onSubmit={(e) => {
        e.preventDefault()
        if (value.trim() !== "") props.onToken(value.trim())
      }}
    >
      <p>
        This page needs a token. Run <code>pnpm plugboard console</code> to open it with a fresh one, or paste
        the output of <code>pnpm plugboard token</code>:
      </p>
      <label for="token-input">UCAN invocation</label>
      <input
        id="token-input"
        type="password"
        autocomplete="off"
        value={value}
        onInput={(e) => setValue((e.target as HTMLInputElement).value)}
      />
      <button type="submit">Use this token</button>
    </form>
  )
}

const Console = () => {
  const [token, setToken] = useState<string | undefined>(() => takeToken())
  const [tab, setTabState] = useState<Tab>("Chat")
  // Catalog and Budget stay mounted once opened (their data does not change while the server runs).
  const [visited, setVisited] = useState<ReadonlySet<Tab>>(new Set(["Chat"]))
  const setTab = (t: Tab) => {
    setTabState(t)
    setVisited((v) => (v.has(t) ? v : new Set([...v, t])))
  }
  const [openSession, setOpenSession] = useState<string | undefined>()
  const api = useMemo(() => (token === undefined ? undefined : client(token)), [token])
  useEffect(() => {
    markReady()
  }, [])
  return (
    <>
      <header>
        <h1>plugboard console</h1>
        {token === undefined ? null : <TabList tab={tab} onSelect={setTab} />}
      </header>
      <main>
        {api === undefined ? (
          <TokenForm
            onToken={(t) => {
              keepToken(t)
              setToken(t)
            }}
          />
        ) : (
          TABS.map((t) => (
            <section
              key={t}
              id={`panel-${t}`}
              role="tabpanel"
              aria-labelledby={`tab-${t}`}
              hidden={tab !== t}
            >
              {t === "Chat" ? (
                <ChatTab api={api} sessionId={openSession} onSession={setOpenSession} />
              ) : !visited.has(t) || (t === "Sessions" && tab !== t) ? null : t === "Catalog" ? (
                <CatalogTab api={api} />
              ) : t === "Budget" ? (
                <BudgetTab api={api} />
              ) : (
                <SessionsTab
                  api={api}
                  current={openSession}
                  onOpen={(id) => {
                    setOpenSession(id)
                    setTab("Chat")
                  }}
                  onDeleted={(id) => {
                    if (id === openSession) setOpenSession(undefined)
                  }}
                />
              )}
            </section>
          ))
        )}
      </main>
    </>
  )
}

/** `inspect --html`: the report the page carries, no API. */
const Report = (props: { readonly report: ConsoleBudget }) => {
  useEffect(() => {
    markReady()
  }, [])
  return (
    <>
      <header>
        <h1>plugboard budget report</h1>
        <p class="sub">
          {props.report.module} · {props.report.tokenizer}
        </p>
      </header>
      <main>
        <BudgetCharts report={props.report} />
      </main>
    </>
  )
}

const embedded = document.getElementById("plugboard-report")
const root = document.getElementById("app")!
if (embedded?.textContent) render(<Report report={JSON.parse(embedded.textContent) as ConsoleBudget} />, root)
else render(<Console />, root)
