// @vitest-environment jsdom
/**
 * Payment required, through the real SDK: a server with the credits plugin (its credit check on:
 * a turn answers 402 `{statusCode, message, error: "insufficient-credits", claims: [],
 * outstandingClaims: []}` on an empty balance; reading one's own sessions and history never
 * needs credits) and users who run out of credits.
 *
 * `useChat` wires `onPaymentRequiredError` (given to the hook, dist/index.d.ts:271) to a turn's
 * POST whose error body has `claims` (dist/index.js:1874-1878: the callback, status back to
 * `ready`, `sendMessage` resolves). The ledger keeps a balance, not claims: the list is empty,
 * and `[]` is what the callback gets.
 *
 * A user starts with one credit: a turn may start on any positive balance and its three model
 * calls cost more than that, so the balance ends at 0 (a charge never goes below zero).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  createSession,
  type Oracle,
  quietAct,
  renderChat,
  type SdkUser,
  startOracle,
  textOf,
  until
} from "./harness.js"
import { type Exchange, network } from "./network.js"

quietAct()

let server: Oracle
beforeAll(async () => {
  server = await startOracle(["weather", "credits"])
})
afterAll(async () => {
  await server?.stop()
})
const net = network(() => server?.url)

const BERLIN = "What's the weather in Berlin?"
const PARIS = "And the weather in Paris?"
const ROME = "What's the weather in Rome?"
const answerFor = (city: string) =>
  new RegExp(`^Here is what Weather \\(get_current_weather\\) returned: city: ${city}, .+\\.$`)

const PAYMENT_REQUIRED = {
  statusCode: 402,
  error: "insufficient-credits",
  message: expect.any(String),
  claims: [],
  outstandingClaims: []
}

/**
 * The 402s answered on the two routes whose errors the hook hands to the callback: the turn's POST
 * and the paged history (the hook's session list is refused too, and fires nothing).
 */
const paymentAnswers = (sessionId: string): Array<Exchange> =>
  net.exchanges.filter(
    (e) =>
      e.status === 402 &&
      ((e.method === "POST" && e.path === `/messages/${sessionId}`) ||
        (e.method === "GET" && e.path.startsWith(`/sessions/${sessionId}/messages`)))
  )

/** A user with one credit, a session, and a first turn that spends the credit. */
const spentUser = async (): Promise<{ user: SdkUser; sessionId: string }> => {
  const user = await server.newUser()
  expect(await server.topUp(user.did, 1)).toBe(1)
  const sessionId = await createSession(server, user)
  const { result, unmount } = renderChat(server, user, sessionId)
  try {
    await until(() => expect(result.current.isLoading).toBe(false))
    await result.current.sendMessage(BERLIN)
    expect(result.current.run.ended).toBe("done")
  } finally {
    unmount()
  }
  expect(await server.balance(user.did)).toBe(0)
  return { user, sessionId }
}

describe("useChat and a 402", () => {
  it("sendMessage at an empty balance: onPaymentRequiredError gets the claims, the chat stays ready, nothing rejects; the history still loads; after a top-up the next message is answered", async () => {
    const user = await server.newUser()
    expect(await server.topUp(user.did, 1)).toBe(1)
    const sessionId = await createSession(server, user)
    // For each call of the callback: how many payment answers had come by then.
    const answeredBefore: Array<number> = []
    const chat = renderChat(server, user, sessionId, {
      onPayment: () => void answeredBefore.push(paymentAnswers(sessionId).length)
    })
    const { result } = chat
    try {
      await until(() => expect(result.current.isLoading).toBe(false))

      // The first turn spends the last credit; the history reload after it is answered as usual.
      await result.current.sendMessage(BERLIN)
      expect(result.current.run.ended).toBe("done")
      expect(await server.balance(user.did)).toBe(0)
      await until(() => expect(textOf(result.current.messages.at(-1)!)).toMatch(answerFor("Berlin")))
      expect(chat.payments).toEqual([])

      // The next message: a 402 with claims. The callback gets them, sendMessage resolves, the
      // status goes back to ready without passing through error.
      const statusesBefore = chat.statuses.length
      await expect(result.current.sendMessage(PARIS)).resolves.toBeUndefined()
      expect(result.current.status).toBe("ready")
      expect(result.current.sendMessageError).toBeFalsy()
      expect(chat.statuses.slice(statusesBefore)).not.toContain("error")
      await until(() => expect(chat.payments).toEqual([[]]))
      expect(paymentAnswers(sessionId).map((e) => [e.method, e.status, e.body])).toEqual([
        ["POST", 402, PAYMENT_REQUIRED]
      ])
      expect(answeredBefore).toEqual([1])
      // No run was started for the refused message.
      expect(net.exchanges.some((e) => e.path.startsWith("/runs/"))).toBe(false)

      // A top-up (the host's credit API): the next message is answered as usual.
      expect(await server.topUp(user.did, 100)).toBe(100)
      await result.current.sendMessage(ROME)
      expect(result.current.run.ended).toBe("done")
      expect(result.current.sendMessageError).toBeFalsy()
      // The transcript, reloaded from the server: the refused question was never kept.
      await until(() => {
        const settled = result.current.messages
        expect(settled.filter((m) => m.type === "human").map(textOf)).toEqual([BERLIN, ROME])
        expect(textOf(settled.at(-1)!)).toMatch(answerFor("Rome"))
        expect(result.current.error).toBeNull()
      })
      expect(chat.payments).toHaveLength(1)
      expect(chat.statuses).not.toContain("error")
    } finally {
      chat.unmount()
    }
  })

  it("a page opened at an empty balance shows the transcript (reading needs no credits); a message is refused with the callback", async () => {
    const { user, sessionId } = await spentUser()
    net.exchanges.length = 0
    const chat = renderChat(server, user, sessionId)
    const { result } = chat
    try {
      await until(() => {
        const messages = result.current.messages
        expect(messages.filter((m) => m.type === "human").map(textOf)).toEqual([BERLIN])
        expect(textOf(messages.at(-1)!)).toMatch(answerFor("Berlin"))
      })
      expect(result.current.error).toBeNull()
      expect(chat.payments).toEqual([])
      await expect(result.current.sendMessage(PARIS)).resolves.toBeUndefined()
      await until(() => expect(chat.payments).toEqual([[]]))
      expect(paymentAnswers(sessionId).map((e) => [e.method, e.status])).toEqual([["POST", 402]])
    } finally {
      chat.unmount()
    }
  })
})
