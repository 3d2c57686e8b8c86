/**
 * How a tool call that did not succeed reaches the AI SDK. The SDK's contract for a failed tool is
 * that `execute` throws: it then records a `tool-error`, sends the model the error's message as an
 * error result (`error-text`; Anthropic's `is_error`), and the step goes on. The message is core's
 * answer, unchanged: the refusal naming the plugin to load, the argument error with its retry, a
 * failed load, a handler's failure.
 */
import { ToolCall } from "@plugboard/core"
import { Schema } from "effect"

const Outcome = Schema.Literal(
  "meta_error",
  "refused",
  "invalid_input",
  "invalid_input_final",
  "blocked_after_invalid_input",
  "handler_error",
  "tool_error",
  "repeated"
)

/** A tool call answered with an error: `message` is what the model reads, `reason` core's outcome. */
export class ToolAnswerError extends Schema.TaggedError<ToolAnswerError>()("ToolAnswerError", {
  reason: Outcome,
  toolName: Schema.String,
  message: Schema.String
}) {
  // The SDK tells the model `error.toString()` ("Name: message" for any Error): core's answer
  // must reach the model as it is, without the class name in front.
  override toString(): string {
    return this.message
  }
}

/** The error for an answer that is not a success, or undefined for a success. */
export const fromAnswer = (toolName: string, answer: ToolCall.Answer): ToolAnswerError | undefined =>
  ToolCall.isSuccess(answer.outcome)
    ? undefined
    : new ToolAnswerError({
        reason: answer.outcome as Schema.Schema.Type<typeof Outcome>,
        toolName,
        message: answer.content
      })
