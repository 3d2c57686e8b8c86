// The conformance suites of the ports whose reference implementations live in core: the clock
// (live and test), the heuristic token counter and the hashing embedder. The adapters run the
// same suites against theirs (tokenizers: o200k, cl100k; embeddings: the ONNX model).
import { ClockConformance, EmbedderConformance, TokenCounterConformance } from "@plugboard/testing"
import { Effect } from "effect"
import * as Clock from "../src/Clock.js"
import * as Embedder from "../src/Embedder.js"
import * as TokenCounter from "../src/TokenCounter.js"

ClockConformance.run("live", () =>
  Effect.map(Effect.provide(Clock.Clock, Clock.layer), (clock) => ({ clock, wall: true }))
)
ClockConformance.run("test", () =>
  Effect.map(Clock.makeTest(1_700_000_000_000), (clock) => ({ clock, advance: clock.advance }))
)

TokenCounterConformance.run("heuristic", () => TokenCounter.heuristic)

EmbedderConformance.run("hashing", () => Effect.succeed(Embedder.hashing()))
EmbedderConformance.run("hashing, 16 dimensions", () => Effect.succeed(Embedder.hashing(16)))
