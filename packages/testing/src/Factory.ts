/**
 * How a conformance suite obtains the implementation under test: a factory returning it either
 * directly, as a Promise or as an Effect that may acquire resources in a `Scope` (a temp file, a
 * connection). Every test case gets a fresh instance, released when the case ends.
 */
import { Effect, Exit, type Scope } from "effect"

/** A factory for the implementation under test: the value itself, a Promise of it, or an Effect. */
export type Factory<A> = () => Effect.Effect<A, unknown, Scope.Scope> | Promise<A> | A

/** Lifts a factory's result into a scoped Effect. */
export const acquire = <A>(factory: Factory<A>): Effect.Effect<A, unknown, Scope.Scope> =>
  Effect.suspend(() => {
    const made = factory()
    if (Effect.isEffect(made)) return made as Effect.Effect<A, unknown, Scope.Scope>
    return made instanceof Promise
      ? Effect.tryPromise({ try: () => made, catch: (e) => e })
      : Effect.succeed(made)
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
