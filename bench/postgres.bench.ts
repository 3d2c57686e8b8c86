/**
 * `pnpm bench postgres`: put and getTuple of the Checkpointer port on Postgres (a user's scoped
 * view of the shared saver, what `DATABASE_URL` runs) against LangGraph's `PostgresSaver` used
 * bare, same data, same server, same run. The body lives in
 * packages/adapters/postgres/test/benchmark.ts, where LangChain resolves.
 */
export { default } from "../packages/adapters/postgres/test/benchmark.js"
