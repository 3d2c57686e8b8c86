/**
 * The Chat tab: one session's turns, streamed as they run — reasoning, tool calls with their
 * arguments and output, the answer — with the thread's `loadedPlugins` and the tokens each model
 * call was offered (core's `TokenBudget.turnCost`, through `GET /console/api/offer`). A stream
 * that drops is rejoined from its last frame (`GET /runs/:id?after=N`).
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { type Api, ApiError, type Frame, frames, type StoredMessage } from "./api.js"
import { fmt } from "./charts.js"
import { InputForm } from "./inputForm.js"

interface ToolView {
  readonly eventId: string
  readonly toolName: string
  readonly args: unknown
  readonly status: "isRunning" | "done"
  readonly output?: string | undefined
  /** The call failed: the model was answered with an error (`isError` on `done` and in history). */
  readonly isError?: boolean | undefined
  /** A call a `run_code` program made: the program's call's event (docs/code-mode.md). */
  readonly parentEventId?: string | undefined
}

/** One model call of a turn: what was loaded when it was made, and what it was offered. */
interface ModelCall {
  readonly n: number
  readonly loaded: ReadonlyArray<string>
  readonly tokens?: number | undefined
}

interface Turn {
  readonly key: string
  readonly user: string
  readonly reasoning: ReadonlyArray<string>
  readonly tools: ReadonlyArray<ToolView>
  readonly answer: string
  readonly calls: ReadonlyArray<ModelCall>
  /** `running`, then how the run ended (`finished`, `aborted`, …), or `waiting` for its user. */
  readonly status: string
  readonly note?: string | undefined
  /** The approval the turn's run waits for (its `waiting` frame), until it is answered. */
  readonly waiting?: WaitView | undefined
}

/**
 * What a run waits for (docs/waiting.md): an approval, as the Approve / Deny box shows it, a
 * question a call in flight asks (`input`), as a form, or an account to connect (`connect`), as a
 * link; the host resumes that run once the user connected, and the console follows it.
 */
interface WaitView {
  readonly kind: "approval" | "input" | "connect"
  /** `connect`: the link that starts the user's connection. */
  readonly url?: string | undefined
  readonly waitId: string
  readonly runId: string
  /** `input`: the question and its form's JSON Schema. */
  readonly message?: string | undefined
  readonly schema?: unknown
  /** Why the last answer was refused (values that do not fit the form). */
  readonly error?: string | undefined
  readonly plugin: string
  readonly tool: string
  readonly args: unknown
  readonly reason: string
  readonly deadline: string
  /** `sending` while the answer is on its way; `answered` once another answer came first. */
  readonly state: "open" | "sending" | "answered"
}

const LOAD = "load_capability"

/** The names a `load_capability` call asked for (`names`, or a single `name`). */
const namesOf = (args: unknown): Array<string> => {
  const a = args as { names?: unknown; name?: unknown } | null
  if (Array.isArray(a?.names)) return a.names.filter((n): n is string => typeof n === "string")
  return typeof a?.name === "string" ? [a.name] : []
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The stored thread as turns (history has no per-call figures). */
const turnsOf = (messages: ReadonlyArray<StoredMessage>): Array<Turn> => {
  const turns: Array<Turn> = []
  let current: Turn | undefined
  const outputs = new Map<string, StoredMessage>()
  for (const m of messages) if (m.type === "tool" && m.toolCallId !== undefined) outputs.set(m.toolCallId, m)
  for (const m of messages) {
    if (m.type === "human") {
      current = {
        key: m.id ?? String(turns.length),
        user: m.content,
        reasoning: [],
        tools: [],
        answer: "",
        calls: [],
        status: "finished"
      }
      turns.push(current)
    } else if (current !== undefined && m.type === "ai") {
      const calls = m.toolCalls ?? []
      const tools = calls.map((c, i) => {
        const answer = c.id === undefined ? undefined : outputs.get(c.id)
        return {
          eventId: c.id ?? `${m.id}-${i}`,
          toolName: c.name,
          args: c.args,
          status: "done" as const,
          output: answer?.content,
          isError: answer?.isError === true
        }
      })
      current = {
        ...current,
        tools: [...current.tools, ...tools],
        answer: current.answer + m.content,
        status: m.cutOff === true ? "cut off" : current.status
      }
      turns[turns.length - 1] = current
    }
  }
  return turns
}

export const ChatTab = (props: {
  readonly api: Api
  readonly sessionId: string | undefined
  readonly onSession: (id: string | undefined) => void
}) => {
  const { api } = props
  const [turns, setTurns] = useState<ReadonlyArray<Turn>>([])
  const [loaded, setLoaded] = useState<ReadonlyArray<string>>([])
  const [offered, setOffered] = useState<number | undefined>()
  const [text, setText] = useState("")
  const [busy, setBusy] = useState(false)
  const [status, setStatus] = useState("")
  const [error, setError] = useState<string | undefined>()
  // The catalog's own suggestion (ConsoleCatalog.placeholder), once it has loaded.
  const [placeholder, setPlaceholder] = useState("")
  const loadable = useRef<Set<string> | undefined>(undefined)
  const offers = useRef(new Map<string, Promise<number>>())
  const session = useRef(props.sessionId)

  const offerFor = (names: ReadonlyArray<string>): Promise<number> => {
    const key = names.join(",")
    let p = offers.current.get(key)
    if (p === undefined) {
      p = api.offer(names).then((o) => o.cost.total)
      offers.current.set(key, p)
    }
    return p
  }

  useEffect(() => {
    api.catalog().then(
      (c) => {
        loadable.current = new Set(c.plugins.filter((p) => p.visibility !== "silent").map((p) => p.name))
        setPlaceholder(c.placeholder)
      },
      () => undefined
    )
  }, [api])

  // Opening a session (from the Sessions tab): its history, its loaded plugins, a run still going.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when the session or token changes, not per render
  useEffect(() => {
    // The session this tab just created for its first message: its turn is already on screen.
    if (props.sessionId !== undefined && props.sessionId === session.current) return
    session.current = props.sessionId
    setTurns([])
    setError(undefined)
    if (props.sessionId === undefined) {
      setLoaded([])
      offerFor([]).then(setOffered, () => undefined)
      return
    }
    const id = props.sessionId
    void (async () => {
      try {
        const [history, thread, run] = await Promise.all([
          api.history(id),
          api.thread(id),
          api.sessionRun(id)
        ])
        if (session.current !== id) return
        setTurns(turnsOf(history.messages))
        setLoaded(thread.loadedPlugins)
        setOffered(thread.cost.total)
        if (run.run !== null) {
          const turn = newTurn("(a turn still running)", thread.loadedPlugins)
          setTurns((ts) => [...ts, turn])
          await follow(id, turn.key, run.run.runId, 0, undefined, thread.loadedPlugins)
        }
      } catch (e) {
        setError((e as Error).message)
      }
    })()
  }, [props.sessionId, api])

  const newTurn = (user: string, loadedNow: ReadonlyArray<string>): Turn => ({
    key: `t${Date.now()}${Math.random()}`,
    user,
    reasoning: [],
    tools: [],
    answer: "",
    calls: [{ n: 1, loaded: loadedNow }],
    status: "running"
  })

  const update = (key: string, f: (t: Turn) => Turn) =>
    setTurns((ts) => ts.map((t) => (t.key === key ? f(t) : t)))

  const priceCall = (key: string, n: number, names: ReadonlyArray<string>) => {
    offerFor(names).then(
      (tokens) =>
        update(key, (t) => ({ ...t, calls: t.calls.map((c) => (c.n === n ? { ...c, tokens } : c)) })),
      () => undefined
    )
  }

  /** Reads a run's frames, rejoining after a drop, until its `done`. */
  const follow = async (
    sessionId: string,
    key: string,
    runId: string | undefined,
    after: number,
    first: Response | undefined,
    loadedAtStart: ReadonlyArray<string>
  ) => {
    let last = after
    let run = runId
    let current = [...loadedAtStart]
    let phase: "model" | "tools" = "model"
    let running = 0
    let calls = 1
    priceCall(key, 1, current)
    const onFrame = (f: Frame) => {
      if (f.id !== undefined && Number.isFinite(f.id)) last = Math.max(last, f.id)
      const d = f.data
      const nextCallIfTools = () => {
        if (phase === "tools" && running === 0) {
          calls += 1
          const n = calls
          const names = [...current]
          update(key, (t) => ({ ...t, calls: [...t.calls, { n, loaded: names }] }))
          priceCall(key, n, names)
          phase = "model"
        }
      }
      switch (f.event) {
        case "run":
          run = d.runId ?? run
          return false
        case "reasoning":
          nextCallIfTools()
          update(key, (t) => ({ ...t, reasoning: [...t.reasoning, String(d.content ?? d.reasoning ?? "")] }))
          return false
        case "message":
          nextCallIfTools()
          update(key, (t) => ({ ...t, answer: t.answer + String(d.content ?? "") }))
          return false
        case "tool_call": {
          const view: ToolView = {
            eventId: String(d.eventId),
            toolName: String(d.toolName),
            args: d.args,
            status: d.status === "done" ? "done" : "isRunning",
            output: typeof d.output === "string" ? d.output : undefined,
            isError: d.isError === true,
            parentEventId: typeof d.parentEventId === "string" ? d.parentEventId : undefined
          }
          if (view.status === "isRunning") {
            nextCallIfTools()
            phase = "tools"
            running += 1
          } else {
            running = Math.max(0, running - 1)
            if (view.toolName === LOAD) {
              const known = loadable.current
              const added = namesOf(view.args).filter(
                (n) => (known === undefined || known.has(n)) && !current.includes(n)
              )
              if (added.length > 0) {
                current = [...current, ...added]
                setLoaded(current)
              }
            }
          }
          update(key, (t) => {
            const i = t.tools.findIndex((x) => x.eventId === view.eventId)
            const tools =
              i < 0 ? [...t.tools, view] : t.tools.map((x, j) => (j === i ? { ...x, ...view } : x))
            // The call that asked has ended (answered, declined at its deadline, or cut): its form goes.
            const asked =
              t.waiting?.kind === "input" && view.status === "done" && view.toolName === t.waiting.tool
            return { ...t, tools, ...(asked ? { waiting: undefined } : {}) }
          })
          return false
        }
        case "error":
          update(key, (t) => ({ ...t, note: String(d.error ?? "error") }))
          return false
        case "waiting":
          update(key, (t) => ({
            ...t,
            waiting: {
              kind: d.kind === "input" ? "input" : d.kind === "connect" ? "connect" : "approval",
              url: typeof d.url === "string" ? d.url : undefined,
              waitId: String(d.waitId ?? ""),
              message: typeof d.message === "string" ? d.message : undefined,
              schema: d.schema,
              runId: String(d.runId ?? run ?? ""),
              plugin: String(d.plugin ?? ""),
              tool: String(d.tool ?? ""),
              args: d.args,
              reason: String(d.reason ?? ""),
              deadline: String(d.deadline ?? ""),
              state: "open"
            }
          }))
          return false
        case "done":
          if (d.reason === "waiting") {
            update(key, (t) => ({ ...t, status: "waiting" }))
            return true
          }
          update(key, (t) => ({
            ...t,
            ...(t.waiting?.kind === "input" ? { waiting: undefined } : {}),
            status: String(d.status ?? "finished"),
            note:
              d.reason === undefined
                ? t.note
                : `${t.note === undefined ? "" : `${t.note}; `}reason: ${d.reason}`
          }))
          return true
        default:
          return false
      }
    }
    let response = first
    for (let attempt = 0; attempt <= 5; attempt++) {
      try {
        if (response === undefined) {
          if (run === undefined)
            throw new Error("The stream dropped before the run was named; it cannot be rejoined.")
          setStatus(`Connection dropped; rejoining run ${run} after frame ${last}…`)
          response = await api.rejoin(run, last)
        }
        run = response.headers.get("x-run-id") ?? run
        for await (const f of frames(response.body!)) {
          if (onFrame(f)) {
            setStatus("")
            // The checkpointed thread is the truth: what the turn loaded, and the next call's offer.
            const thread = await api.thread(sessionId)
            setLoaded(thread.loadedPlugins)
            setOffered(thread.cost.total)
            return
          }
        }
      } catch (e) {
        if (e instanceof ApiError && e.status !== 429 && e.status < 500) {
          update(key, (t) => ({ ...t, status: "lost", note: e.message }))
          setStatus("")
          return
        }
      }
      response = undefined
      await sleep(300 * (attempt + 1))
    }
    update(key, (t) => ({ ...t, status: "lost", note: "The run could not be rejoined." }))
    setStatus("")
  }

  /** Answers the turn's approval; the resumed run streams into the same turn. */
  const answer = async (key: string, wait: WaitView, decision: "approve" | "deny") => {
    const id = props.sessionId
    if (id === undefined || busy) return
    setBusy(true)
    setError(undefined)
    update(key, (t) => ({ ...t, waiting: { ...wait, state: "sending" } }))
    try {
      const response = await api.resume(wait.runId, decision)
      if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
        const body = (await response.json()) as { wait?: { answered?: { by?: string } } }
        update(key, (t) => ({
          ...t,
          waiting: { ...wait, state: "answered" },
          note: `answered already${body.wait?.answered?.by === undefined ? "" : ` by ${body.wait.answered.by}`}`
        }))
        return
      }
      update(key, (t) => ({ ...t, waiting: undefined, status: "running" }))
      await follow(id, key, response.headers.get("x-run-id") ?? undefined, 0, response, loaded)
    } catch (e) {
      update(key, (t) => ({ ...t, waiting: { ...wait, state: "open" } }))
      setError((e as Error).message)
    } finally {
      setBusy(false)
    }
  }

  /**
   * Answers the question of a call in flight (an input wait): the run is still streaming into the
   * turn, so the box goes away and the call goes on; a refusal (values that do not fit) is shown.
   */
  const answerInput = async (
    key: string,
    wait: WaitView,
    body: { readonly values: Record<string, unknown> } | { readonly decline: true }
  ) => {
    update(key, (t) => ({ ...t, waiting: { ...wait, state: "sending", error: undefined } }))
    try {
      const result = await api.answer(wait.runId, { ...body, waitId: wait.waitId })
      if (result.already === true) {
        update(key, (t) => ({
          ...t,
          waiting: { ...wait, state: "answered" },
          note: `answered already${result.wait?.answered?.by === undefined ? "" : ` by ${result.wait.answered.by}`}`
        }))
        return
      }
      update(key, (t) => (t.waiting?.waitId === wait.waitId ? { ...t, waiting: undefined } : t))
    } catch (e) {
      update(key, (t) => ({ ...t, waiting: { ...wait, state: "open", error: (e as Error).message } }))
    }
  }

  /**
   * A connect wait (docs/waiting.md#connect-waits): the user connects in another tab; the host
   * answers the wait and resumes the run, which this polls for and then streams into the turn.
   */
  const awaitConnect = async (key: string, wait: WaitView) => {
    const id = props.sessionId
    if (id === undefined) return
    update(key, (t) => ({ ...t, waiting: { ...wait, state: "sending" } }))
    const until = Date.parse(wait.deadline)
    while (Number.isNaN(until) || Date.now() < until + 5_000) {
      try {
        const [record] = (await api.waits(wait.runId)).waits
        if (record?.answered !== null && record?.answered !== undefined && record.resumedRunId !== null) {
          update(key, (t) => ({ ...t, waiting: undefined, status: "running" }))
          await follow(id, key, record.resumedRunId, 0, undefined, loaded)
          return
        }
      } catch (e) {
        update(key, (t) => ({ ...t, waiting: { ...wait, state: "open", error: (e as Error).message } }))
        return
      }
      await sleep(1_000)
    }
    update(key, (t) => ({ ...t, waiting: { ...wait, state: "open" } }))
  }

  const send = async () => {
    const message = text.trim()
    if (message === "" || busy) return
    setBusy(true)
    setError(undefined)
    try {
      let id = props.sessionId
      if (id === undefined) {
        id = (await api.createSession()).sessionId
        session.current = id
        props.onSession(id)
      }
      const turn = newTurn(message, loaded)
      setTurns((ts) => [...ts, turn])
      setText("")
      const response = await api.startTurn(id, message)
      await follow(id, turn.key, response.headers.get("x-run-id") ?? undefined, 0, response, loaded)
    } catch (e) {
      setError((e as Error).message)
    } finally {
      setBusy(false)
    }
  }

  return (
    <div class="chat">
      <aside class="thread-state" aria-label="Thread state">
        <h2>Loaded plugins</h2>
        {loaded.length === 0 ? (
          <p class="muted">none yet</p>
        ) : (
          <ul class="chips" data-testid="loaded-plugins">
            {loaded.map((n) => (
              <li key={n} data-plugin={n}>
                {n}
              </li>
            ))}
          </ul>
        )}
        <p>
          Next model call offered:{" "}
          <strong data-testid="offered">{offered === undefined ? "…" : fmt(offered)}</strong> tokens
        </p>
        <p class="muted">Session: {props.sessionId ?? "new"}</p>
        <button type="button" onClick={() => props.onSession(undefined)} disabled={busy}>
          New chat
        </button>
      </aside>
      <div class="conversation">
        <ol class="turns" aria-live="polite">
          {turns.map((t) => (
            <li key={t.key} class="turn" data-status={t.status}>
              <p class="user">
                <span class="who">You</span> {t.user}
              </p>
              {t.calls.length > 0 ? (
                <p class="calls" data-testid="model-calls">
                  {t.calls.map((c) => (
                    <span key={c.n} class="call" data-call={c.n} data-tokens={c.tokens}>
                      call {c.n}: {c.tokens === undefined ? "…" : fmt(c.tokens)} tokens offered
                      {c.loaded.length === 0 ? "" : ` (${c.loaded.join(", ")})`}
                    </span>
                  ))}
                </p>
              ) : null}
              {t.reasoning.map((r, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: reasoning blocks come in order
                <p key={i} class="reasoning">
                  {r}
                </p>
              ))}
              {t.tools.length > 0 ? (
                <ul class="tools">
                  {t.tools.map((tool) => (
                    <li
                      key={tool.eventId}
                      data-tool={tool.toolName}
                      data-event={tool.eventId}
                      data-parent={tool.parentEventId}
                      class={tool.parentEventId === undefined ? undefined : "nested"}
                      data-status={tool.status === "done" && tool.isError === true ? "failed" : tool.status}
                    >
                      <details>
                        <summary>
                          {tool.status === "isRunning" ? (
                            "running "
                          ) : tool.isError === true ? (
                            <span class="failed">✗ failed </span>
                          ) : (
                            "✓ "
                          )}
                          <code>{tool.toolName}</code> <code class="args">{JSON.stringify(tool.args)}</code>
                        </summary>
                        {tool.output === undefined ? null : <pre>{tool.output}</pre>}
                      </details>
                    </li>
                  ))}
                </ul>
              ) : null}
              {t.answer === "" ? null : (
                <p class="answer" data-testid="answer">
                  {t.answer}
                </p>
              )}
              {t.waiting === undefined ? null : t.waiting.kind === "connect" ? (
                <fieldset
                  class="waiting"
                  aria-label="Connect"
                  data-state={t.waiting.state}
                  data-run={t.waiting.runId}
                >
                  <p>
                    ⏸ <code>{t.waiting.plugin}</code> needs you to connect your account: {t.waiting.reason}
                  </p>
                  <p>
                    <a
                      href={t.waiting.url}
                      target="_blank"
                      rel="noopener noreferrer"
                      data-connect-wait={t.waiting.plugin}
                      onClick={() => t.waiting !== undefined && void awaitConnect(t.key, t.waiting)}
                    >
                      Connect
                    </a>{" "}
                    <span class="muted">
                      The conversation goes on once you connect (before{" "}
                      {new Date(t.waiting.deadline).toLocaleString()}).
                    </span>
                  </p>
                  {t.waiting.error === undefined ? null : (
                    <p class="error" role="alert">
                      {t.waiting.error}
                    </p>
                  )}
                </fieldset>
              ) : t.waiting.kind === "input" ? (
                <fieldset
                  class="waiting"
                  aria-label="Question"
                  data-state={t.waiting.state}
                  data-run={t.waiting.runId}
                >
                  <p>
                    ⏸ <code>{t.waiting.tool}</code> ({t.waiting.plugin}) asks: {t.waiting.message}
                  </p>
                  <p class="muted">Answer before {new Date(t.waiting.deadline).toLocaleString()}.</p>
                  {t.waiting.state === "answered" ? (
                    <p class="note">{t.note}</p>
                  ) : (
                    <InputForm
                      id={t.waiting.waitId}
                      schema={t.waiting.schema}
                      disabled={t.waiting.state === "sending"}
                      onSend={(values) =>
                        t.waiting !== undefined && void answerInput(t.key, t.waiting, { values })
                      }
                      onDecline={() =>
                        t.waiting !== undefined && void answerInput(t.key, t.waiting, { decline: true })
                      }
                    />
                  )}
                  {t.waiting.error === undefined ? null : (
                    <p class="error" role="alert">
                      {t.waiting.error}
                    </p>
                  )}
                </fieldset>
              ) : (
                <fieldset
                  class="waiting"
                  aria-label="Approval"
                  data-state={t.waiting.state}
                  data-run={t.waiting.runId}
                >
                  <p>
                    ⏸ <code>{t.waiting.tool}</code> ({t.waiting.plugin}) waits for your approval:{" "}
                    <code class="args">{JSON.stringify(t.waiting.args)}</code>
                  </p>
                  <p class="muted">
                    {t.waiting.reason} Answer before {new Date(t.waiting.deadline).toLocaleString()}.
                  </p>
                  {t.waiting.state === "answered" ? (
                    <p class="note">{t.note}</p>
                  ) : (
                    <p>
                      <button
                        type="button"
                        disabled={busy}
                        onClick={() => t.waiting !== undefined && void answer(t.key, t.waiting, "approve")}
                      >
                        Approve
                      </button>{" "}
                      <button
                        type="button"
                        disabled={busy}
                        onClick={() => t.waiting !== undefined && void answer(t.key, t.waiting, "deny")}
                      >
                        Deny
                      </button>
                    </p>
                  )}
                </fieldset>
              )}
              {t.status === "running" || t.status === "finished" || t.status === "waiting" ? null : (
                <p class="note">
                  ended {t.status}
                  {t.note === undefined ? "" : ` — ${t.note}`}
                </p>
              )}
            </li>
          ))}
        </ol>
        {status === "" ? null : <p role="status">{status}</p>}
        {error === undefined ? null : <p role="alert">{error}</p>}
        <form
          class="composer"
          onSubmit={(e) => {
            e.preventDefault()
            void send()
          }}
        >
          <label for="message">Message</label>
          <textarea
            id="message"
            rows={2}
            value={text}
            placeholder={placeholder}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey) {
                e.preventDefault()
                void send()
              }
            }}
          />
          <button type="submit" disabled={busy}>
            Send
          </button>
          <button
            type="button"
            disabled={!busy || props.sessionId === undefined}
            onClick={() => props.sessionId !== undefined && void api.abort(props.sessionId)}
          >
            Stop
          </button>
        </form>
      </div>
    </div>
  )
}
