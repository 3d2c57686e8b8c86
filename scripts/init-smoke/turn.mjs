// One streamed turn against a running `plugboard serve`, over HTTP with a UCAN from `plugboard
// token`, as a client of the wire contract (docs/http-api.md): a session, then a message whose
// answer streams as SSE. Asserts the scripted router loaded the scaffold's plugin, called its tool
// and answered, and that the turn ended with `done`.
//   node turn.mjs <url> <token>
const [url, token] = process.argv.slice(2)
const headers = {
  Authorization: `Bearer ${token}`,
  "X-Auth-Type": "ucan",
  "Content-Type": "application/json"
}

const created = await fetch(`${url}/sessions`, { method: "POST", headers, body: "{}" })
if (created.status !== 201) throw new Error(`POST /sessions: ${created.status} ${await created.text()}`)
const { sessionId } = await created.json()

const response = await fetch(`${url}/messages/${sessionId}`, {
  method: "POST",
  headers,
  body: JSON.stringify({ message: "What is a 15% tip on a bill of 80?", stream: true })
})
if (response.status !== 200 || !response.headers.get("content-type")?.startsWith("text/event-stream")) {
  throw new Error(
    `POST /messages: ${response.status} ${response.headers.get("content-type")} ${await response.text()}`
  )
}
const text = await response.text()
const events = text
  .split("\n\n")
  .map((block) => {
    const name = /^event: (.*)$/m.exec(block)?.[1]
    const data = /^data: (.*)$/m.exec(block)?.[1]
    return name === undefined ? undefined : { name, data: data === undefined ? undefined : JSON.parse(data) }
  })
  .filter((e) => e !== undefined)

const calls = events.filter((e) => e.name === "tool_call" && e.data.status === "done")
const tool = calls.find((e) => e.data.toolName === "compute_tip")
const answer = events
  .filter((e) => e.name === "message")
  .map((e) => e.data.content)
  .join("")
const done = events.at(-1)
const problems = []
if (!calls.some((e) => e.data.toolName === "load_capability")) problems.push("no load_capability call")
if (tool === undefined) problems.push("no compute_tip call")
if (answer.trim() === "") problems.push("no answer")
if (done?.name !== "done") problems.push(`the stream did not end with done (last: ${done?.name})`)
if (problems.length > 0) {
  console.error(text)
  throw new Error(`the turn: ${problems.join("; ")}`)
}
console.log(`[init-smoke] turn ok: ${calls.map((e) => e.data.toolName).join(" → ")} → "${answer.trim()}"`)
