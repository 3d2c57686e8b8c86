/** The Sessions tab: the user's sessions (`GET /sessions`), to open in Chat or delete. */
import { useEffect, useState } from "preact/hooks"
import type { Api, Session } from "./api.js"

export const SessionsTab = (props: {
  readonly api: Api
  readonly current: string | undefined
  readonly onOpen: (id: string) => void
  /** A session was deleted: Chat leaves it if it is the one open. */
  readonly onDeleted: (id: string) => void
}) => {
  const [sessions, setSessions] = useState<ReadonlyArray<Session> | undefined>()
  const [error, setError] = useState<string | undefined>()
  const refresh = () =>
    props.api.sessions().then(
      (r) => {
        setSessions(r.sessions)
        setError(undefined)
      },
      (e: Error) => setError(e.message)
    )
  // biome-ignore lint/correctness/useExhaustiveDependencies: lists again when the token changes
  useEffect(() => {
    void refresh()
  }, [props.api])
  const remove = async (s: Session) => {
    if (!confirm(`Delete “${s.title || s.sessionId}” and its conversation?`)) return
    try {
      await props.api.deleteSession(s.sessionId)
      props.onDeleted(s.sessionId)
      await refresh()
    } catch (e) {
      setError((e as Error).message)
    }
  }
  return (
    <div class="sessions">
      <button type="button" onClick={() => void refresh()}>
        Refresh
      </button>
      {error === undefined ? null : <p role="alert">{error}</p>}
      {sessions === undefined ? (
        <p aria-busy="true">Loading sessions…</p>
      ) : sessions.length === 0 ? (
        <p>No sessions yet: send a message in Chat.</p>
      ) : (
        <table>
          <caption class="sr-only">Your sessions</caption>
          <thead>
            <tr>
              <th scope="col">title</th>
              <th scope="col">last updated</th>
              <th scope="col">id</th>
              <th scope="col">
                <span class="sr-only">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sessions.map((s) => (
              <tr key={s.sessionId} data-session={s.sessionId} aria-current={s.sessionId === props.current}>
                <td>{s.title || "(untitled)"}</td>
                <td>{new Date(s.lastUpdatedAt).toLocaleString()}</td>
                <td>
                  <code>{s.sessionId}</code>
                </td>
                <td>
                  <button type="button" onClick={() => props.onOpen(s.sessionId)}>
                    Open
                  </button>{" "}
                  <button
                    type="button"
                    onClick={() => void remove(s)}
                    aria-label={`Delete ${s.title || s.sessionId}`}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  )
}
