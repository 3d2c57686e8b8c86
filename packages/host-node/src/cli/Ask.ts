/**
 * A question on the terminal, for `plugboard chat`'s approvals (docs/waiting.md): one readline
 * interface per question, closed once answered, so nothing holds the process open after the chat.
 */
import { createInterface } from "node:readline"
import type { Readable, Writable } from "node:stream"

/**
 * Asks `question` on `output` and resolves with the line read from `input`, or `undefined` when
 * `input` ends first (a pipe, a closed stdin): the chat then says how to answer later.
 */
export const askLine = (input: Readable, output: Writable, question: string): Promise<string | undefined> =>
  new Promise((resolve) => {
    if (input.readableEnded) return resolve(undefined)
    const rl = createInterface({ input, output, terminal: false })
    let answered = false
    rl.once("line", (line) => {
      answered = true
      rl.close()
      resolve(line)
    })
    rl.once("close", () => {
      if (!answered) resolve(undefined)
    })
    output.write(question)
  })
