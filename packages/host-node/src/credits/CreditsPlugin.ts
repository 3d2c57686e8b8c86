/**
 * The silent `credits` plugin (issue 8, "Credits"): an `afterModel` middleware that charges the
 * user for each model call by its token usage, through core's `CreditLedger` port. Silent: the
 * model never sees it; it acts only through middleware. Its presence in the catalog is what turns
 * on the server's credit check (402 on an empty balance).
 *
 * Within a turn that reserved credits (the server's turn routes, docs/failure-modes.md), a call's cost goes to
 * the turn's hold (`TurnCredits`), settled when the turn ends; elsewhere it is deducted at once.
 *
 * The ledger is the one the host runs with: either given to `makeCreditsPlugin`, or (for a plugin
 * exported from a module the CLI loads, which cannot know the host's ledger) read from the shared
 * state the host registers under `CREDITS_LEDGER_KEY`.
 */
import {
  type CreditLedger,
  CreditPricing,
  definePlugin,
  type ModelResult,
  type RuntimeContext
} from "@plugboard/core"
import { Effect } from "effect"
import { isTurnCredits, TURN_CREDITS_KEY } from "./TurnCredits.js"

/** The plugin's name; the server's credit stage is on when a plugin of this name is loaded. */
export const CREDITS_PLUGIN_NAME = "credits"

/** Shared-state key under which the host exposes its `CreditLedgerService` to the plugin. */
export const CREDITS_LEDGER_KEY = "plugboard.creditLedger"

/** Default price: one credit per started 1,000 tokens (input + output); core's `CreditPricing`. */
export const DEFAULT_TOKENS_PER_CREDIT = CreditPricing.DEFAULT_TOKENS_PER_CREDIT

/** Options of `makeCreditsPlugin`. */
export interface CreditsPluginOptions {
  /** The ledger to charge; default the host's (shared state `CREDITS_LEDGER_KEY`). */
  readonly ledger?: CreditLedger.CreditLedgerService
  /** Tokens one credit buys (a positive integer); default 1,000. */
  readonly tokensPerCredit?: number
}

const isLedger = (value: unknown): value is CreditLedger.CreditLedgerService =>
  typeof value === "object" && value !== null && typeof (value as { deduct?: unknown }).deduct === "function"

/** Builds the silent credits plugin. */
export const makeCreditsPlugin = (options: CreditsPluginOptions = {}) => {
  const tokensPerCredit = options.tokensPerCredit ?? DEFAULT_TOKENS_PER_CREDIT
  if (!CreditPricing.isTokensPerCredit(tokensPerCredit)) {
    throw new RangeError(`tokensPerCredit must be a positive whole number, got ${tokensPerCredit}`)
  }
  let warnedNoUsage = false
  const charge = async (result: ModelResult, context: RuntimeContext): Promise<void> => {
    if (result.usage === undefined && !warnedNoUsage) {
      // Nothing measured, nothing charged (CreditPricing): say so once, or calls go free unnoticed.
      warnedNoUsage = true
      context.logger.warn("credits: the model reports no token usage; its calls are not charged", {
        did: context.user.did
      })
    }
    const amount = CreditPricing.costOf(result.usage, tokensPerCredit)
    if (amount === 0) return
    // A turn that reserved credits is charged against its hold, settled at its end (TurnCredits).
    const turn = context.shared[TURN_CREDITS_KEY]
    if (
      isTurnCredits(turn) &&
      (options.ledger === undefined || options.ledger === turn.ledger) &&
      turn.charge(amount)
    )
      return
    const ledger = options.ledger ?? context.shared[CREDITS_LEDGER_KEY]
    if (!isLedger(ledger)) {
      context.logger.error("credits: no ledger registered; the model call was not charged", { amount })
      return
    }
    const outcome = await Effect.runPromise(
      Effect.either(
        ledger.deduct(context.user.did, amount, `model call in session ${context.session.id}`.slice(0, 500))
      )
    )
    if (outcome._tag === "Left") {
      // The call already happened: refusing now would not undo it. Log loudly, keep the turn.
      context.logger.error("credits: deduct failed", {
        did: context.user.did,
        amount,
        error: outcome.left.message
      })
    } else if (outcome.right.shortfall > 0) {
      context.logger.warn("credits: balance ran out during the turn", {
        did: context.user.did,
        shortfall: outcome.right.shortfall
      })
    }
  }
  return definePlugin({
    name: CREDITS_PLUGIN_NAME,
    manifest: {
      title: "Credits",
      summary: "Charges the user's credit balance for each model call, by token usage.",
      whenToUse: [],
      category: "core",
      visibility: "silent",
      stability: "stable"
    },
    middlewares: [{ name: "credits", afterModel: charge }]
  })
}

/** The credits plugin charging the host's ledger at the default price. */
export const creditsPlugin = makeCreditsPlugin()
