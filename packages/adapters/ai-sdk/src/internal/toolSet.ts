/**
 * The `tools` object a turn hands to `generateText` / `streamText`: a view of the step's offer,
 * not a record of the catalog (docs/ai-sdk.md#how-it-works).
 *
 * - Its keys are the tools offered at the current step, in core's order: the AI SDK sends the
 *   model exactly those (`Object.entries`), and a load adds keys at the next step, appended.
 * - Any other name still resolves, to a tool that is never listed (not enumerable): when the model
 *   calls a tool that was not offered, the SDK finds it, runs it, and it answers with core's
 *   refusal (which plugin to load, or the closest names) instead of the SDK's generic "unavailable
 *   tool" error. Nothing of the tool the model named runs.
 * - Tool objects are made when the SDK asks for them, so a step costs what it offers: a catalog of
 *   5,000 plugins does not make 5,000 tools per request.
 *
 * The SDK reads `tools` afresh at every step (it keeps the object it was given), which is what
 * lets the keys follow the offer. It copies the object only when the app passes `activeTools`
 * (or tool callers); the offer still holds then, and an unoffered call gets the SDK's own error.
 */

/** The AI SDK tool shape this module builds (structurally what `tool()` returns). */
export interface SdkTool {
  readonly description?: string
  readonly inputSchema: unknown
  readonly execute: (input: unknown, options: SdkToolOptions) => Promise<unknown>
}

/** What the SDK passes a tool's `execute` (AI SDK 6 and 7). */
export interface SdkToolOptions {
  readonly toolCallId: string
  readonly messages?: ReadonlyArray<unknown>
  readonly abortSignal?: AbortSignal
}

/** What the tool set reads from its turn. */
export interface ToolSource {
  /** Names offered at the current step, in order. Called on every enumeration. */
  readonly names: () => ReadonlyArray<string>
  /** Whether `name` is offered at the current step. */
  readonly offers: (name: string) => boolean
  /** The tool object for `name`, offered or not (made once per name per turn). */
  readonly tool: (name: string) => SdkTool
}

// Names the tool set leaves to the plain object: a promise check (`then`), and what every object
// has (`toString`, `constructor`...). A model calling a tool of such a name gets the SDK's error.
const passThrough = (key: string): boolean => key === "then" || key in Object.prototype

/** The proxy the turn exposes as `tools`. Read-only: a write is a TypeError in strict code. */
export const makeToolSet = (source: ToolSource): Record<string, SdkTool> =>
  new Proxy({} as Record<string, SdkTool>, {
    ownKeys: () => [...source.names()],
    has: (target, key) => (typeof key === "string" && !passThrough(key) ? true : Reflect.has(target, key)),
    get: (target, key) =>
      typeof key === "string" && !passThrough(key) ? source.tool(key) : Reflect.get(target, key),
    getOwnPropertyDescriptor: (_target, key) => {
      if (typeof key !== "string" || passThrough(key)) return undefined
      return { value: source.tool(key), enumerable: source.offers(key), configurable: true, writable: false }
    },
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false
  })
