/**
 * The gateway's remaining contract over real sockets: a handshake with `auth.ucanDelegation`
 * connects as the delegation's issuer; `action_call` carries the session and request ids; an
 * answer from another session of the same user is ignored, and the right socket's answer is
 * the one the model sees.
 */
import { ToolMessage } from "@langchain/core/messages"
import { ScriptedChatModel } from "@plugboard/models"
import { encodeToken, mintDelegation, mintInvocation } from "@plugboard/ucan"
import { describe, expect, it } from "vitest"
import { call, newSession, user } from "../helpers.js"
import { socketHarness } from "./harness.js"

const harness = socketHarness()
const { connect } = harness

const openPanel = {
  name: "open_panel",
  description: "Opens a panel.",
  schema: { type: "object", properties: { panel: { type: "string" } } }
}

describe("handshake with auth.ucanDelegation", () => {
  it("a valid delegation connects as its issuer; one for another audience is refused", async () => {
    const running = await harness.start({ model: ScriptedChatModel.script([]) })
    const { app, url } = running
    const u = await user(app.oracleDid)
    const sessionId = await newSession(url, u.headers)
    const delegation = await encodeToken(
      await mintDelegation({ issuer: u.signer, audience: app.oracleDid, ttlSeconds: 300 })
    )
    const { connected } = await connect(url, { ucanDelegation: delegation }, sessionId)
    expect(connected).toMatchObject({ sessionId, did: u.did })
    const stranger = await user(app.oracleDid)
    const misaddressed = await encodeToken(
      await mintDelegation({ issuer: u.signer, audience: stranger.did, ttlSeconds: 300 })
    )
    await expect(connect(url, { ucanDelegation: misaddressed }, sessionId)).rejects.toMatchObject({
      data: { status: 401, error: "wrong-audience" }
    })
  })
})

describe("AG-UI action calls", () => {
  it("carry sessionId and requestId; another session of the same user cannot answer; the right socket can", async () => {
    const model = ScriptedChatModel.script([{ tool: "open_panel", args: { panel: "billing" } }, "Opened."])
    const running = await harness.start({ model, env: { CLIENT_TOOL_TIMEOUT_MS: "20000" } })
    const { app, url } = running
    const u = await user(app.oracleDid)
    const mine = await newSession(url, u.headers)
    const other = await newSession(url, u.headers)
    const invocation = await mintInvocation({ issuer: u.signer, audience: app.oracleDid, ttlSeconds: 600 })
    const { socket: right } = await connect(url, { invocation }, mine)
    const { socket: wrong } = await connect(url, { invocation }, other)
    const wrongSaw: Array<string> = []
    wrong.onAny((event: string) => wrongSaw.push(event))

    const payloads: Array<Record<string, unknown>> = []
    const acks: Array<[string, unknown]> = []
    right.on("action_call", async (payload: Record<string, unknown>) => {
      payloads.push(payload)
      // Same user, other session: refused, and the call keeps waiting.
      acks.push([
        "other session",
        await wrong.emitWithAck("action_call_result", { callId: payload.callId, result: "forged" })
      ])
      // The right session, but answering as a browser tool: refused too.
      acks.push([
        "wrong kind",
        await right.emitWithAck("tool_result", { callId: payload.callId, result: "wrong kind" })
      ])
      acks.push([
        "right socket",
        await right.emitWithAck("action_call_result", { callId: payload.callId, result: "panel open" })
      ])
    })
    const answer = await call(`${url}/messages/${mine}`, {
      method: "POST",
      headers: u.headers,
      body: { message: "Open billing", agActions: [openPanel], requestId: "req-action-1" }
    })
    expect(answer.status).toBe(200)
    expect(answer.body.message.content).toBe("Opened.")
    expect(payloads).toEqual([
      {
        sessionId: mine,
        requestId: "req-action-1",
        callId: expect.any(String),
        toolCallId: payloads[0]?.callId,
        toolName: "open_panel",
        args: { panel: "billing" }
      }
    ])
    expect(acks).toEqual([
      ["other session", { accepted: false }],
      ["wrong kind", { accepted: false }],
      ["right socket", { accepted: true }]
    ])
    const results = model.calls
      .flatMap((c) => c.messages)
      .filter((m): m is ToolMessage => ToolMessage.isInstance(m))
    expect(results.map((m) => [m.name, m.content])).toEqual([["open_panel", "panel open"]])
    // The other session's socket saw nothing of this turn.
    expect(wrongSaw).toEqual([])
  })
})
