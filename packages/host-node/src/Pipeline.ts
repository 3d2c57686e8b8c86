/**
 * The request pipeline (docs/spec/pipeline.md#the-stages), one stage per function, each over a core
 * port: auth (401, the agent never runs) → credits (402, only when the `credits` plugin is loaded
 * and `DISABLE_CREDITS` is not true) → per-user rate limit (429 with `Retry-After`) → route. The
 * host composes them; every rule they apply belongs to the port behind them.
 *
 * Each stage's duration is recorded in the request's `StageTimings`, which the server exposes as
 * a `Server-Timing` header on JSON answers and hands to `onTimings` when a request ends.
 */
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Auth, type CreditLedger, type RateLimiter, type RuntimeLogger } from "@plugboard/core"
import { Context, Effect } from "effect"
import * as TurnCredits from "./credits/TurnCredits.js"
import { HttpFailure, unavailable } from "./Http.js"
import { RequestUser } from "./Routes.js"

/** Milliseconds spent per stage of one request; a stage that did not run is absent. */
export interface StageTimings {
  auth?: number
  credits?: number
  limit?: number
  /** Loading the thread's checkpoint (checkpointer reads). */
  load?: number
  /** The agent's own work: model calls, tools, middleware (turn time minus load and save). */
  agent?: number
  /** Writing checkpoints. */
  save?: number
  /** From the first byte of the request to the end of the response's work. */
  total?: number
}

/** The stages `Server-Timing` and the benchmark report, in pipeline order. */
export const STAGES = ["auth", "credits", "limit", "load", "agent", "save", "total"] as const

/** Runs `effect`, adding its wall-clock duration to `timings[stage]`. */
export const timed = <A, E, R>(
  timings: StageTimings,
  stage: keyof StageTimings,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const started = performance.now()
    const record = () => {
      timings[stage] = (timings[stage] ?? 0) + (performance.now() - started)
    }
    // Not `Effect.ensuring`: its uninterruptible region costs more than the stage it times. A
    // request interrupted mid-stage reports no timings at all, so only success and failure count.
    return Effect.matchCauseEffect(effect, {
      onFailure: (cause) => {
        record()
        return Effect.failCause(cause)
      },
      onSuccess: (value) => {
        record()
        return Effect.succeed(value)
      }
    })
  })

/** The `Server-Timing` header value of the stages measured so far. */
export const serverTiming = (timings: StageTimings): string =>
  STAGES.filter((s) => timings[s] !== undefined)
    .map((s) => `${s};dur=${timings[s]!.toFixed(3)}`)
    .join(", ")

/** The credential headers of a request, as `Auth` reads them. */
export const credentialsOf = (headers: Readonly<Record<string, string | undefined>>): Auth.Credentials => ({
  authorization: headers.authorization,
  authType: headers["x-auth-type"],
  ucanDelegation: headers["x-ucan-delegation"]
})

/** Stage 1: the caller's DID, or 401 with the port's reason. The port is never trusted to not throw. */
export const authenticate = (
  auth: Auth.AuthService,
  credentials: Auth.Credentials
): Effect.Effect<Auth.Verified, HttpFailure> =>
  auth.verify(credentials).pipe(
    Effect.catchAllDefect(() =>
      Effect.fail(
        new Auth.AuthError({ reason: "malformed", message: "The credentials could not be checked." })
      )
    ),
    Effect.mapError((error) =>
      error.reason === "unavailable"
        ? unavailable("The credentials could not be checked", "authentication", "auth-unavailable", error)
        : new HttpFailure({ status: 401, message: error.message, error: error.reason })
    )
  )

const ledgerFailure = (error: CreditLedger.CreditLedgerError) =>
  error.reason === "invalid-did"
    ? new HttpFailure({
        status: 401,
        message: `Credits could not be checked: ${error.message}`,
        error: `credits-${error.reason}`
      })
    : unavailable("Credits could not be checked", "the credit ledger", `credits-${error.reason}`, error)

const paymentRequired = () =>
  new HttpFailure({
    status: 402,
    message: "Your credit balance is empty. Top up to continue.",
    error: "insufficient-credits",
    // What QiForge clients read to tell "pay first" from any other failure: `claims` on a
    // message, `outstandingClaims` on history. The credit ledger keeps a balance, not
    // payment claims: the lists are empty, and their presence is the signal.
    extra: { claims: [], outstandingClaims: [] }
  })

/**
 * Stage 2 of a turn: reserves `estimate` credits for `ttlMs` (concurrent turns can
 * never take the balance below zero), or 402 with the same body as an empty balance when they
 * are not available. A ledger that cannot answer is a 503, never a free pass.
 */
export const reserveCredits = (
  ledger: CreditLedger.CreditLedgerService,
  did: string,
  estimate: number,
  ttlMs: number
): Effect.Effect<CreditLedger.Reservation, HttpFailure> =>
  ledger
    .reserve(did, estimate, { ttlMs })
    .pipe(
      Effect.mapError((error) =>
        error.reason === "insufficient-credits" ? paymentRequired() : ledgerFailure(error)
      )
    )

/** Stage 3: one slot of the user's rate limit, or 429 with `Retry-After` (whole seconds, at least 1). */
export const rateLimit = (
  limiter: RateLimiter.RateLimiterService,
  did: string
): Effect.Effect<RateLimiter.Decision, HttpFailure> =>
  limiter.take(did).pipe(
    Effect.mapError((error) =>
      unavailable(
        "The request could not be checked against the rate limit",
        "the rate limiter",
        error.reason,
        error
      )
    ),
    Effect.filterOrFail(
      (decision) => decision.allowed,
      (decision) => {
        const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
        return new HttpFailure({
          status: 429,
          // Name the knobs: whoever meets this limit first is usually the operator trying the server.
          message: `Too many requests: at most ${decision.limit} per window (set by THROTTLE_LIMIT and THROTTLE_TTL_MS). Retry in ${seconds} s.`,
          error: "rate-limited",
          headers: {
            "retry-after": String(seconds),
            "x-ratelimit-limit": String(decision.limit),
            "x-ratelimit-remaining": "0"
          }
        })
      }
    )
  )

/** Where a request's stage timings go, and the report its stream calls when its work is over. */
export class RequestProbe extends Context.Tag("@plugboard/host-node/RequestProbe")<
  RequestProbe,
  {
    readonly timings: StageTimings
    readonly report: () => void
    /** Who the pipeline authenticated, for the request's log line. */
    readonly seen: { did?: string }
  }
>() {}

/** What `makeGuard` runs the pipeline with: the stages' ports and the server's settings. */
export interface GuardDeps {
  readonly auth: Auth.AuthService
  readonly ledger: CreditLedger.CreditLedgerService
  readonly limiter: RateLimiter.RateLimiterService
  /** Whether turns reserve credits (the `credits` plugin loaded and not `DISABLE_CREDITS`). */
  readonly creditsEnabled: boolean
  /** What a turn reserves (`CREDIT_RESERVE_ESTIMATE`). */
  readonly creditReserveEstimate: number
  /** How long a turn's hold lives. */
  readonly reservationTtlMs: number
  /** Makes the user's state available on this host (a Matrix restore) before the handler runs. */
  readonly prepareUser?: ((did: string) => Promise<void>) | undefined
  readonly logger: RuntimeLogger
}

/**
 * A private route: the pipeline (auth → credits → limit, then the user's state made available
 * on this host), then the handler with the user. Reached only through the router, so an
 * unknown route never costs auth or rate-limit work.
 */
export const makeGuard =
  (deps: GuardDeps) =>
  <R>(handler: HttpRouter.Route.Handler<HttpFailure, R>, spends = false) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { timings, report, seen } = yield* RequestProbe
      const user = yield* timed(timings, "auth", authenticate(deps.auth, credentialsOf(request.headers)))
      seen.did = user.did
      // A turn reserves its estimate before anything else is spent on it (docs/failure-modes.md);
      // its turn settles the hold, and a request that ends before its turn starts releases it.
      const credits =
        spends && deps.creditsEnabled
          ? TurnCredits.make(
              deps.ledger,
              yield* timed(
                timings,
                "credits",
                reserveCredits(deps.ledger, user.did, deps.creditReserveEstimate, deps.reservationTtlMs)
              ),
              deps.logger
            )
          : undefined
      const rest = Effect.gen(function* () {
        yield* timed(timings, "limit", rateLimit(deps.limiter, user.did))
        const prepareUser = deps.prepareUser
        if (prepareUser !== undefined) {
          yield* timed(
            timings,
            "load",
            Effect.promise(() => prepareUser(user.did))
          )
        }
        return yield* Effect.provideService(handler, RequestUser, {
          did: user.did,
          capabilities: user.capabilities,
          timings,
          streamEnded: report,
          credits
        })
      })
      return yield* credits === undefined
        ? rest
        : Effect.onExit(rest, () => (credits.attached() ? Effect.void : credits.settle("turn not started")))
    })
