/**
 * Code mode at boot (`CODE_MODE=on`, docs/code-mode.md): the QuickJS sandbox is made once per
 * process and proved to run a program before the host serves, so a host whose operator asked for
 * `run_code` never serves without it (it fails to boot, saying why).
 */
import { QuickJsSandbox } from "@plugboard/codemode"
import { CodeMode } from "@plugboard/core"
import type { CodeModeOption } from "@plugboard/langgraph"
import { Effect, type Either } from "effect"

/** The sandbox `run_code` runs in, after one program ran in it; or why it did not start. */
export const startCodeMode = (): Promise<Either.Either<CodeModeOption, string>> =>
  Effect.runPromise(
    QuickJsSandbox.make().pipe(
      Effect.tap((sandbox) =>
        sandbox.run({
          code: "return 1 + 1",
          tools: [],
          call: async () => ({ ok: false, error: "no tools" }),
          bounds: CodeMode.DEFAULT_BOUNDS
        })
      ),
      Effect.map((sandbox): CodeModeOption => ({ sandbox })),
      Effect.mapError((error) => `the sandbox did not start: ${error.message}`),
      Effect.either
    )
  )
