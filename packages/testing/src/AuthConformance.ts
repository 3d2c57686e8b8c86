/**
 * The conformance suite of the `Auth` port. The factory returns the verifier, a way to issue
 * valid credentials, and optionally the implementation's own refused cases (expired, wrong
 * audience, ...) with the reason each must fail with:
 *
 * ```ts
 * AuthConformance.run("test", () => ({
 *   auth: Auth.makeTest,
 *   issue: () => Effect.succeed({ did: "did:key:z6Mk1", credentials: Auth.testCredentials("did:key:z6Mk1") })
 * }))
 * ```
 */
import { Auth } from "@plugboard/core"
import { Cause, Effect, Exit, type Scope } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { acquire, type Factory } from "./Factory.js"

/** A credential the implementation must refuse, and why. */
export interface RefusedCase {
  readonly name: string
  readonly credentials: Auth.Credentials
  readonly reason: Auth.AuthErrorReason
}

/** A verifier under test and how to make credentials for it. */
export interface AuthHarness {
  readonly auth: Auth.AuthService
  /** Fresh valid credentials and the DID they must verify to. */
  readonly issue: () => Effect.Effect<
    { readonly credentials: Auth.Credentials; readonly did: string },
    unknown
  >
  /**
   * The implementation's own refusals (expired, wrong audience, tampered signature, ...):
   * only the implementation knows how to forge those.
   */
  readonly refused?: () => Effect.Effect<ReadonlyArray<RefusedCase>, unknown>
}

/** Options of the suite. */
export interface AuthConformanceOptions {
  /** fast-check runs of the fuzz property (default 100). */
  readonly numRuns?: number
}

const knownReasons = new Set<string>(Auth.AuthErrorReason.literals)

const withAuth = <A>(
  factory: Factory<AuthHarness>,
  body: (h: AuthHarness) => Effect.Effect<A, unknown, Scope.Scope>
) => Effect.runPromise(Effect.scoped(Effect.flatMap(acquire(factory), body)))

/** Verifies and classifies: a DID, a typed refusal, or (a bug) a defect. */
const outcome = (auth: Auth.AuthService, credentials: Auth.Credentials) =>
  Effect.map(Effect.exit(auth.verify(credentials)), (exit) => {
    if (Exit.isSuccess(exit)) return { ok: true as const, verified: exit.value }
    const failure = Cause.failureOption(exit.cause)
    if (failure._tag === "Some") return { ok: false as const, error: failure.value }
    throw new Error(`verify died instead of failing with AuthError: ${Cause.pretty(exit.cause)}`)
  })

const expectRefused = (
  auth: Auth.AuthService,
  credentials: Auth.Credentials,
  reason?: Auth.AuthErrorReason
): Effect.Effect<void> =>
  Effect.map(outcome(auth, credentials), (o) => {
    expect(o.ok, `expected ${JSON.stringify(credentials)} to be refused`).toBe(false)
    if (o.ok) return
    expect(o.error._tag).toBe("AuthError")
    expect(knownReasons.has(o.error.reason)).toBe(true)
    expect(o.error.message.length).toBeGreaterThan(0)
    if (reason !== undefined) expect(o.error.reason).toBe(reason)
  })

const headerValue = fc.oneof(
  fc.constant(undefined),
  fc.string({ maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ maxLength: 200 }).map((s) => `Bearer ${s}`),
  fc.base64String({ maxLength: 400 }).map((s) => `Bearer ${s}`)
)

/** Registers the Auth conformance suite for one implementation. */
export const run = (
  name: string,
  factory: Factory<AuthHarness>,
  options: AuthConformanceOptions = {}
): void => {
  describe(`Auth conformance: ${name}`, () => {
    it("verifies issued credentials into the issuer's DID, repeatably", () =>
      withAuth(factory, ({ auth, issue }) =>
        Effect.gen(function* () {
          const { credentials, did } = yield* issue()
          const first = yield* auth.verify(credentials)
          expect(first.did).toBe(did)
          expect(Auth.isDid(first.did)).toBe(true)
          if (first.expiresAt !== undefined) expect(Number.isFinite(first.expiresAt)).toBe(true)
          const second = yield* auth.verify(credentials)
          expect(second.did).toBe(did)
        })
      ))

    it("refuses absent credentials with 'missing'", () =>
      withAuth(factory, ({ auth }) =>
        Effect.gen(function* () {
          yield* expectRefused(auth, {}, "missing")
          yield* expectRefused(
            auth,
            { authorization: undefined, authType: undefined, ucanDelegation: undefined },
            "missing"
          )
          yield* expectRefused(auth, { authorization: "", ucanDelegation: "" }, "missing")
          yield* expectRefused(auth, { authorization: "   " }, "missing")
        })
      ))

    it("refuses malformed headers with a typed error", () =>
      withAuth(factory, ({ auth }) =>
        Effect.gen(function* () {
          for (const authorization of ["Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "token", "Bearer a b c"]) {
            yield* expectRefused(auth, { authorization })
          }
          yield* expectRefused(auth, { authorization: "Bearer !!not-a-token!!", authType: "ucan" })
          yield* expectRefused(auth, { ucanDelegation: "%%%" })
          yield* expectRefused(auth, { authorization: `Bearer ${"A".repeat(100_000)}` })
        })
      ))

    it("refuses the implementation's own invalid cases with their reasons", () =>
      withAuth(factory, ({ auth, refused }) =>
        Effect.gen(function* () {
          const cases = refused === undefined ? [] : yield* refused()
          for (const c of cases) {
            const o = yield* outcome(auth, c.credentials)
            expect(o.ok, c.name).toBe(false)
            if (!o.ok) expect(o.error.reason, c.name).toBe(c.reason)
          }
        })
      ))

    it("property: arbitrary headers end in a DID or an AuthError, never a crash", () =>
      withAuth(factory, ({ auth }) =>
        Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              headerValue,
              headerValue,
              headerValue,
              (authorization, authType, ucanDelegation) =>
                Effect.runPromise(
                  Effect.map(outcome(auth, { authorization, authType, ucanDelegation }), (o) => {
                    if (o.ok) expect(Auth.isDid(o.verified.did)).toBe(true)
                    else expect(knownReasons.has(o.error.reason)).toBe(true)
                  })
                )
            ),
            { numRuns: options.numRuns ?? 100 }
          )
        )
      ))
  })
}
