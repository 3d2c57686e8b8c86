/**
 * `pnpm bench conversation`: a turn's latency and the bytes it stores as one conversation grows
 * to 300 turns, for plugboard's SQLite saver and LangChain's `SqliteSaver`, same agent, same run.
 * The body lives in packages/adapters/langgraph/test/sqlite/conversationBenchmark.ts, where LangChain resolves.
 */
export { default } from "../packages/adapters/langgraph/test/sqlite/conversationBenchmark.js"
