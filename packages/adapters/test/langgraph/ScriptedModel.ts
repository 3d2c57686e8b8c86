/**
 * A minimal local test double until `@plugboard/adapters/models`' `ScriptedChatModel` lands:
 * a LangChain chat model that replays a script and records which tools each call was offered.
 */
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager"
import { BaseChatModel, type BaseChatModelCallOptions } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"

export type Step =
  | { readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly args: Record<string, unknown> }> }
  | { readonly answer: string }
  | { readonly error: Error }

export interface RecordedCall {
  readonly tools: ReadonlyArray<string>
  readonly messages: ReadonlyArray<BaseMessage>
}

interface Options extends BaseChatModelCallOptions {
  readonly tools?: ReadonlyArray<{ readonly function?: { readonly name: string }; readonly name?: string }>
}

let counter = 0

export class TestScriptedModel extends BaseChatModel<Options> {
  readonly calls: Array<RecordedCall> = []
  private cursor = 0

  constructor(private readonly steps: ReadonlyArray<Step>) {
    super({})
  }

  _llmType(): string {
    return "test-scripted"
  }

  override bindTools(tools: ReadonlyArray<unknown>) {
    return this.withConfig({ tools } as Partial<Options>)
  }

  async _generate(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    _run?: CallbackManagerForLLMRun
  ) {
    const tools = (options.tools ?? []).map((t) => t.function?.name ?? t.name ?? "?")
    this.calls.push({ tools, messages })
    const step = this.steps[this.cursor++]
    if (step === undefined) throw new Error(`script exhausted after ${this.steps.length} steps`)
    if ("error" in step) throw step.error
    const message =
      "answer" in step
        ? new AIMessage({ content: step.answer })
        : new AIMessage({
            content: "",
            tool_calls: step.toolCalls.map((c) => ({
              name: c.name,
              args: c.args,
              id: `call_${++counter}`,
              type: "tool_call" as const
            }))
          })
    return {
      generations: [{ text: typeof message.content === "string" ? message.content : "", message }]
    } satisfies ChatResult
  }
}
