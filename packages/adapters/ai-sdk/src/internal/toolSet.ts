/**
 * The `tools` object a turn hands to `generateText` / `streamText`: the step's offer, not a record
 * of the catalog (docs/ai-sdk.md#how-it-works).
 *
 * - Its enumerable keys are the tools offered at the current step, in core's order: the SDK sends
 *   the model exactly those (`Object.entries`). At a step's start (`prepareStep`), the tools a load
 *   added are appended, as core's offer appends them.
 * - It is a plain object. The SDK keeps the object it was given and reads it afresh at every step,
 *   which is what lets the keys follow the offer; and it enumerates it several times a step, which
 *   a Proxy would make ten times dearer (measured: `pnpm bench ai-sdk`, docs/ai-sdk.md).
 * - A name the model calls that was not offered is not in it, so the SDK asks the turn's
 *   `repairToolCall`. The repair defines that name as a non-enumerable property (never listed,
 *   never offered) whose tool answers with core's refusal: which plugin to load, or the closest
 *   names. Nothing of the tool the model named runs. Without the repair the SDK answers with its
 *   own "unavailable tool" error, and nothing runs either.
 * - Tool objects are made for what is offered, so a step costs what it offers: a catalog of 5,000
 *   plugins does not make 5,000 tools per request.
 */

/** The AI SDK tool shape this module builds (structurally what `tool()` returns). */
export interface SdkTool {
  readonly description?: string
  readonly inputSchema: unknown
  readonly execute: (input: unknown, options: SdkToolOptions) => Promise<unknown>
  /**
   * The SDK's own approval (AI SDK 6 and 7): the call stops the loop with a
   * `tool-approval-request` until the app answers it (docs/ai-sdk.md#approvals).
   */
  readonly needsApproval?: true
}

/** What the SDK passes a tool's `execute` (AI SDK 6 and 7). */
export interface SdkToolOptions {
  readonly toolCallId: string
  readonly messages?: ReadonlyArray<unknown>
  readonly abortSignal?: AbortSignal
}

/** A turn's tools: the offered ones enumerable, the refused ones not. */
export type ToolRecord = Record<string, SdkTool>

/** Appends an offered tool (a name already there, refused before, is moved to the end). */
export const appendOffered = (record: ToolRecord, name: string, tool: SdkTool): void => {
  if (Object.hasOwn(record, name)) delete record[name]
  record[name] = tool
}

/** Makes `name` resolvable without offering it: a property the SDK finds but never lists. */
export const defineRefused = (record: ToolRecord, name: string, tool: SdkTool): void => {
  Object.defineProperty(record, name, { value: tool, enumerable: false, configurable: true, writable: true })
}
