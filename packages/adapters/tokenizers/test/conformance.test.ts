// The TokenCounter port's shared suite against the exact counters (core runs it on the heuristic).
import { TokenCounterConformance } from "@plugboard/testing"
import { makeTiktokenCounter } from "../src/Tiktoken.js"

TokenCounterConformance.run("o200k", () => makeTiktokenCounter("o200k"))
TokenCounterConformance.run("cl100k", () => makeTiktokenCounter("cl100k"))
