/**
 * The Postgres checkpointer: the core `Checkpointer` port's suite (one state per user, users
 * apart), and LangGraph's official checkpointer suite run through one user's `UserScopedSaver`
 * (so the thread-id scoping is held to everything the suite checks), each on a fresh schema.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint"
import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation"
import { CheckpointerConformance } from "@plugboard/testing"
import { Effect, Exit, Scope } from "effect"
import { afterAll, describe } from "vitest"
import { conversationCheckpoint } from "../../sqlite/test/helpers.js"
import { makeCheckpointer, type UserScopedSaver } from "../src/index.js"
import { database, dropSchemas, POSTGRES_URL, SKIP_REASON } from "./helpers.js"

// Skipped, with the reason in its title, when the service is not up.
describe.skipIf(POSTGRES_URL === undefined)(
  POSTGRES_URL === undefined ? `Postgres checkpointer: ${SKIP_REASON}` : "Postgres checkpointer",
  () => {
    afterAll(dropSchemas)

    CheckpointerConformance.run<UserScopedSaver>("postgres", () =>
      Effect.map(database(), (db) => ({
        checkpointer: makeCheckpointer(db),
        put: (saver, value) =>
          Effect.promise(async () => {
            const checkpoint = conversationCheckpoint(1)
            checkpoint.channel_values.marker = value
            checkpoint.channel_versions.marker = saver.getNextVersion(undefined)
            await saver.put(
              { configurable: { thread_id: "t" } },
              checkpoint,
              { source: "loop", step: 1, parents: {} } as CheckpointMetadata,
              { marker: checkpoint.channel_versions.marker }
            )
          }),
        get: (saver) =>
          Effect.promise(async () => {
            const tuple = await saver.getTuple({ configurable: { thread_id: "t" } })
            return tuple?.checkpoint.channel_values.marker as string | undefined
          })
      }))
    )

    // The official suite, on the saver a user gets from the port.
    const scopes = new WeakMap<UserScopedSaver, Scope.CloseableScope>()
    const initializer = {
      checkpointerName: "@plugboard/postgres (user-scoped PostgresSaver)",
      createCheckpointer: () =>
        Effect.runPromise(
          Effect.gen(function* () {
            const scope = yield* Scope.make()
            const db = yield* Scope.extend(database(), scope)
            const saver = yield* makeCheckpointer(db).forUser("did:key:z6MkSuite")
            scopes.set(saver, scope)
            return saver
          })
        ),
      destroyCheckpointer: (saver: UserScopedSaver) => {
        const scope = scopes.get(saver)
        return scope === undefined ? undefined : Effect.runPromise(Scope.close(scope, Exit.void))
      }
    }
    validate(initializer)
    deltaChannelHistoryTests(initializer)
  }
)
