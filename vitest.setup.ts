/**
 * Property tests explore new random inputs on every local run; in CI they replay one fixed seed,
 * so that the run on a clean clone is the run that was checked before pushing. `FC_SEED=<n>`
 * replays any seed (a failure prints its seed and path).
 */
import fc from "fast-check"

const fromEnv = process.env.FC_SEED
if (fromEnv !== undefined && fromEnv !== "") fc.configureGlobal({ seed: Number(fromEnv) })
else if (process.env.CI === "true") fc.configureGlobal({ seed: 20261122 })
