/**
 * `pnpm bench sqlite`: put, getTuple and list throughput of `@plugboard/sqlite`'s saver
 * against `@langchain/langgraph-checkpoint-sqlite`'s `SqliteSaver`, same data, same run. The
 * body lives in packages/adapters/sqlite/test/benchmark.ts, where LangChain resolves.
 */
export { default } from "../packages/adapters/sqlite/test/benchmark.js"
