/**
 * `@plugboard/serde`: a faster reader and writer of LangGraph's `JsonPlusSerializer` "json"
 * format, shared by plugboard's SQLite and Postgres checkpointers. Reading a long thread with the
 * stock serializer costs a promise turn per property of every message; this reads synchronously
 * and gives the same values, and writes the same bytes (docs/benchmarks.md).
 */
export { dumpJsonPlus, loadJsonPlus, makeDumper, makeLoader } from "./FastJson.js"
export { FastJsonPlusSerializer } from "./FastJsonPlusSerializer.js"
