/**
 * `pnpm bench pgconversation`: a turn's latency and the bytes it stores as one conversation grows
 * to 300 turns on the Postgres checkpointer, messages as deltas against full copies, same run.
 * The body lives in packages/host-node/test/postgresConversationBenchmark.ts, where every package resolves.
 */
export { default } from "../packages/host-node/test/postgresConversationBenchmark.js"
