/** `PRELOAD`: the predictive preload's mode (docs/architecture.md#predictive-preload), shadow by default. */
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { fromEnv, type ServerConfig } from "../src/Config.js"

const check = (env: Record<string, string>): Either.Either<ServerConfig, ReadonlyArray<string>> =>
  Either.mapLeft(Effect.runSync(Effect.either(fromEnv(env, "/srv"))), (e) => e.lines)

describe("PRELOAD", () => {
  it("is shadow when unset, and takes off, shadow or on in any case", () => {
    expect(Either.getOrThrow(check({})).preload).toBe("shadow")
    expect(Either.getOrThrow(check({ PRELOAD: "on" })).preload).toBe("on")
    expect(Either.getOrThrow(check({ PRELOAD: "OFF" })).preload).toBe("off")
  })

  it("refuses any other value with a line naming the variable and the modes", () => {
    const lines = Either.match(check({ PRELOAD: "always" }), { onLeft: (l) => l, onRight: () => [] })
    expect(lines).toEqual(['[config-error] PRELOAD must be one of off, shadow, on, got "always".'])
  })
})
