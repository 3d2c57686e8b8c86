/**
 * What a model call costs in credits: a rule of the domain (what a turn costs
 * lives in core: docs/architecture.md#packages-ports-and-the-dependency-rule; docs/spec/pipeline.md#the-stages), so every ledger adapter, middleware and report prices a call the same
 * way. Pure: no ledger, no I/O.
 *
 * The price is one credit per *started* `tokensPerCredit` tokens of input plus output:
 * `⌈(input + output) / tokensPerCredit⌉`. Rounding up means any call that used tokens costs at
 * least one credit (a flood of tiny calls is never free), and the cost never decreases as usage
 * grows. A call with no reported usage, or zero tokens, costs nothing: nothing was measured to
 * charge for, and charging a guess would make the ledger disagree with the provider's bill.
 */

/** Token usage of one model call (the shape of `ModelResult.usage` and `ChatModel.Usage`). */
export interface TokenUsage {
  readonly inputTokens: number
  readonly outputTokens: number
}

/** Default price: one credit per started 1,000 tokens (input + output). */
export const DEFAULT_TOKENS_PER_CREDIT = 1000

/** Whether `n` is a valid price (tokens one credit buys): a positive safe integer. */
export const isTokensPerCredit = (n: unknown): n is number =>
  typeof n === "number" && Number.isSafeInteger(n) && n > 0

/**
 * Tokens a usage counts: input plus output. A negative, NaN or infinite count (a
 * provider's garbage) counts as 0 for that side, so garbage never produces a charge of NaN or ∞.
 */
const tokensOf = (usage: TokenUsage | undefined): number => {
  if (usage === undefined) return 0
  const side = (n: number) => (Number.isFinite(n) && n > 0 ? n : 0)
  return side(usage.inputTokens) + side(usage.outputTokens)
}

/**
 * Credits a model call costs: `⌈tokens / tokensPerCredit⌉`, 0 for no usage or zero tokens.
 * Throws a `RangeError` when `tokensPerCredit` is not a positive whole number (a host's
 * misconfiguration, caught when the pricing is set up, not per call).
 */
export const costOf = (
  usage: TokenUsage | undefined,
  tokensPerCredit: number = DEFAULT_TOKENS_PER_CREDIT
): number => {
  if (!isTokensPerCredit(tokensPerCredit)) {
    throw new RangeError(`tokensPerCredit must be a positive whole number, got ${String(tokensPerCredit)}`)
  }
  const tokens = tokensOf(usage)
  return tokens > 0 ? Math.ceil(tokens / tokensPerCredit) : 0
}
