/**
 * The `plugboard` CLI as the README runs it from the repository (`node --conditions=@plugboard/source
 * scripts/plugboard.mjs <command>`), in a folder of the test's choosing with only PATH and HOME
 * set, so no variable of the developer's shell reaches it.
 */
import { execFile } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** The repository's root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../../..")

/** What a CLI run ended with: its exit code (-1 when it had none) and its output. */
export interface CliRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs `plugboard <args>` in `cwd` (60 s at most). */
export const runCli = (cwd: string, ...args: ReadonlyArray<string>): Promise<CliRun> =>
  runCliWith(cwd, {}, ...args)

/** `runCli` with `env` set as well (the configuration's variables: `DATABASE_URL`, ...). */
export const runCliWith = (
  cwd: string,
  env: Readonly<Record<string, string>>,
  ...args: ReadonlyArray<string>
): Promise<CliRun> =>
  new Promise((done) => {
    execFile(
      process.execPath,
      ["--conditions=@plugboard/source", join(ROOT, "scripts/plugboard.mjs"), ...args],
      { cwd, env: { PATH: process.env.PATH ?? "", HOME: cwd, ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        done({ code: error === null ? 0 : ((error as { code?: number }).code ?? -1), stdout, stderr })
    )
  })
