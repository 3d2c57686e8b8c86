/**
 * An AI SDK agent with a plugboard catalog (docs/ai-sdk.md): the app keeps its model, its messages
 * and its own `generateText` call; the catalog adds the tools, the per-step offer and the prompt.
 * `pnpm tsx --conditions=@plugboard/source examples/ai-sdk/main.ts` runs it offline.
 */
import { createPlugboard } from "@plugboard/ai-sdk"
import { generateText, type LanguageModel, type ModelMessage, stepCountIs } from "ai"
import { makeExamplePlugins } from "../catalog/index.js"

const catalog = await createPlugboard({ plugins: makeExamplePlugins() })

/** Answers `question` in a conversation whose earlier `messages` the app keeps; appends to them. */
export const ask = async (model: LanguageModel, messages: Array<ModelMessage>, question: string) => {
  messages.push({ role: "user", content: question })
  // The thread's loads are read back from `messages`: nothing else to store.
  const turn = catalog.turn({ messages, system: "You are a helpful assistant." })
  const result = await generateText({
    model,
    system: turn.system,
    messages,
    tools: turn.tools,
    prepareStep: turn.prepareStep,
    repairToolCall: turn.repairToolCall,
    stopWhen: stepCountIs(8)
  })
  messages.push(...result.responseMessages)
  return result
}
