/**
 * LangGraph's own `PostgresSaver` (`@langchain/langgraph-checkpoint-postgres`) under the official
 * checkpointer suite, so its count stands next to ours (use it "if it passes what ours
 * passes"). Each checkpointer gets a schema of its own and drops it afterwards.
 */
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres"
import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation"
import pg from "pg"
import { describe } from "vitest"
import { POSTGRES_URL, SKIP_REASON, uniqueName } from "./helpers.js"

// Skipped, with the reason in its title, when the service is not up.
describe.skipIf(POSTGRES_URL === undefined)(
  POSTGRES_URL === undefined ? `LangGraph PostgresSaver: ${SKIP_REASON}` : "LangGraph PostgresSaver",
  () => {
    const url = POSTGRES_URL
    const schemas = new WeakMap<PostgresSaver, { pool: pg.Pool; schema: string }>()
    const initializer = {
      checkpointerName: "@langchain/langgraph-checkpoint-postgres",
      createCheckpointer: async () => {
        const schema = uniqueName("lg")
        const pool = new pg.Pool({ connectionString: url, max: 4 })
        await pool.query(`CREATE SCHEMA ${schema}`)
        const saver = new PostgresSaver(pool, undefined, { schema })
        await saver.setup()
        schemas.set(saver, { pool, schema })
        return saver
      },
      destroyCheckpointer: async (saver: PostgresSaver) => {
        const made = schemas.get(saver)
        if (made === undefined) return
        await made.pool.query(`DROP SCHEMA ${made.schema} CASCADE`)
        await made.pool.end()
      }
    }
    validate(initializer)
    deltaChannelHistoryTests(initializer)
  }
)
