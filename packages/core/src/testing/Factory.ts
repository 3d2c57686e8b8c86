/**
 * How a conformance suite obtains the implementation under test: a factory returning it either
 * as a Promise or as an Effect that may acquire resources in a `Scope` (a temp file, a
 * connection). Every test case gets a fresh instance, released when the case ends.
 */
import { Effect, Exit, type Scope } from "effect"

/** A factory for the implementation under test. */
export type Factory<A> = () => Effect.Effect<A, unknown, Scope.Scope> | Promise<A>

/** Lifts a factory's result into a scoped Effect. */
export const acquire = <A>(factory: Factory<A>): Effect.Effect<A, unknown, Scope.Scope> =>
  Effect.suspend(() => {
    const made = factory()
    return Effect.isEffect(made) ? made : Effect.tryPromise({ try: () => made, catch: (e) => e })
  })

/** Runs `body` with a fresh instance from `factory`, releasing its resources afterwards. */
export const withInstance = <A, B>(
  factory: Factory<A>,
  body: (instance: A) => Effect.Effect<B, unknown, Scope.Scope>
): Promise<B> => Effect.runPromise(Effect.scoped(Effect.flatMap(acquire(factory), body)))

/** Runs an effect to its Exit (never rejects), for asserting on typed failures. */
export const exitOf = <A, E>(effect: Effect.Effect<A, E>): Promise<Exit.Exit<A, E>> =>
  Effect.runPromiseExit(effect)

/** The typed failure of an exit, or undefined when it succeeded or died. */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
