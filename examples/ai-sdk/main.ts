/**
 * The AI SDK example, offline: plugboard's scripted model served on the OpenAI wire, the agent of
 * `agent.ts` talking to it through `@ai-sdk/openai-compatible`, two questions in one conversation.
 * Point `OPENAI_BASE_URL` (and `OPENAI_API_KEY`, `MODEL`) at a real endpoint to use a real model.
 *
 *   pnpm tsx --conditions=@plugboard/source examples/ai-sdk/main.ts
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { ScriptedChatModel, serveOpenAiWire } from "@plugboard/models"
import type { ModelMessage } from "ai"
import { ask } from "./agent.js"

const local =
  process.env.OPENAI_BASE_URL === undefined ? await serveOpenAiWire(ScriptedChatModel.router()) : undefined
const provider = createOpenAICompatible({
  name: "example",
  baseURL: process.env.OPENAI_BASE_URL ?? local!.url,
  apiKey: process.env.OPENAI_API_KEY ?? "none"
})
const model = provider.chatModel(process.env.MODEL ?? local?.modelId ?? "gpt-4o-mini")
const messages: Array<ModelMessage> = []
try {
  for (const question of ["What's the weather in Berlin?", "And the forecast for Berlin this week?"]) {
    console.log(`> ${question}`)
    const result = await ask(model, messages, question)
    for (const step of result.steps) {
      for (const call of step.toolCalls) console.log(`→ ${call.toolName} ${JSON.stringify(call.input)}`)
    }
    console.log(`${result.text}\n`)
  }
} finally {
  await local?.close()
}
