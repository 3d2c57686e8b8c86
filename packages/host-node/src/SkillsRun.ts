/**
 * Skills whose scripts run (docs/skills-that-run.md), as the server's commands turn them on.
 * `SKILLS_RUN` names the skills allowed to run their scripts: `all`, or skill names separated by
 * commas; unset runs none, so a skills folder is mounted with `read_file` only until the operator
 * says otherwise. `SKILLS_RUN_PYTHON` and `SKILLS_RUN_NODE` name the interpreters, and
 * `SKILLS_RUN_BWRAP` the sandbox's program when it is not the `bwrap` on `PATH`.
 * `SKILLS_RUN_HOSTS` lists the hosts scripts may reach over HTTP(S) through the sandbox's proxy;
 * unset, they have no network. `serve`, `plugboard mcp` and `inspect` read them here, so all
 * three agree on what may run.
 *
 * The setting becomes `loadSkills`' `run` option only when this host can make the sandbox: the
 * probe runs `true` in the very sandbox a script gets. Without one it fails closed, with a boot
 * warning naming what to install, and every skill keeps `read_file` only.
 */
import { resolve } from "node:path"
import { isPluginName } from "@plugboard/core"
import {
  DEFAULT_LIMITS,
  findBwrap,
  type LoadSkillsOptions,
  NAME_MAX,
  parseAllowHosts,
  probeSandbox
} from "@plugboard/skills"
import { Either } from "effect"
import { envValue } from "./EnvValue.js"

/** Which skills may run their scripts, and with what (`SKILLS_RUN` and its `SKILLS_RUN_*`). */
export interface SkillsRun {
  readonly skills: "all" | ReadonlyArray<string>
  /** The bubblewrap program; the `bwrap` on `PATH` when unset. */
  readonly bwrap: string | undefined
  /** The Python for `.py` scripts (a venv's `bin/python`, mounted read-only); `python3` when unset. */
  readonly python: string | undefined
  /** The Node for `.js` scripts; the one running the host when unset. */
  readonly node: string | undefined
  /** Hosts scripts may reach through the sandbox's proxy (`SKILLS_RUN_HOSTS`); empty, no network. */
  readonly hosts: ReadonlyArray<string>
}

/**
 * Bytes of the files a script wrote that one answer carries to the model; beyond them a file is
 * named with its size. Small, because the answer enters the model's context.
 */
export const RETURN_BYTES = 64 * 1024

/** The variables `skillsRunFromEnv` reads. */
export const SKILLS_RUN_VARIABLES = [
  "SKILLS_RUN",
  "SKILLS_RUN_BWRAP",
  "SKILLS_RUN_PYTHON",
  "SKILLS_RUN_NODE",
  "SKILLS_RUN_HOSTS"
] as const

/**
 * `SKILLS_RUN` and its programs and hosts from `env`: `undefined` when no skill may run (unset,
 * empty or `none`; the others are then not read), the setting otherwise, or the message of a value
 * that is not one (`Left`). A program
 * given as a relative path is resolved against `cwd`; a bare name is looked up as a command.
 */
export const skillsRunFromEnv = (
  env: Readonly<Record<string, string | undefined>>,
  cwd: string
): Either.Either<SkillsRun | undefined, string> => {
  const raw = envValue(env.SKILLS_RUN)
  if (raw === undefined || raw.toLowerCase() === "none") return Either.right(undefined)
  const interpreter = (name: string) => {
    const v = envValue(env[name])
    return v === undefined || !v.includes("/") ? v : resolve(cwd, v)
  }
  const entries = (env.SKILLS_RUN_HOSTS ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "")
  const allowed = parseAllowHosts(entries)
  if (allowed.errors.length > 0) return Either.left(`SKILLS_RUN_HOSTS: ${allowed.errors[0]}`)
  const tools = {
    bwrap: interpreter("SKILLS_RUN_BWRAP"),
    python: interpreter("SKILLS_RUN_PYTHON"),
    node: interpreter("SKILLS_RUN_NODE"),
    hosts: [...new Set(entries)]
  }
  if (raw.toLowerCase() === "all") return Either.right({ skills: "all", ...tools })
  const names = raw
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "")
  const invalid = names.find((n) => n.length > NAME_MAX || !isPluginName(n))
  if (invalid !== undefined)
    return Either.left(
      `SKILLS_RUN must be "all", "none" or skill names separated by commas (lowercase letters, digits and hyphens), got ${JSON.stringify(invalid.slice(0, 80))}.`
    )
  return Either.right({ skills: [...new Set(names)], ...tools })
}

/** What `skillsRun` gives `loadSkills`: its `run` option, or why no script may run here. */
export type ScriptRunning =
  | { readonly _tag: "Off" }
  | { readonly _tag: "On"; readonly run: NonNullable<LoadSkillsOptions["run"]> }
  | { readonly _tag: "Unavailable"; readonly reason: string }

/**
 * The `run` option for `setting` on this host, after probing the sandbox with `folder` (a skills
 * folder, mounted as a script's would be). `path` is where `bwrap` is looked for, unless the
 * setting names it.
 */
export const scriptRunning = async (
  setting: SkillsRun | undefined,
  folder: string,
  path: string = process.env.PATH ?? ""
): Promise<ScriptRunning> => {
  if (setting === undefined) return { _tag: "Off" }
  const bwrap = setting.bwrap ?? findBwrap(path)
  const unavailable = await probeSandbox(bwrap, folder)
  if (unavailable !== undefined || bwrap === undefined)
    return { _tag: "Unavailable", reason: unavailable ?? "bubblewrap (`bwrap`) is not on PATH" }
  return {
    _tag: "On",
    run: {
      runner: {
        bwrap,
        python: setting.python,
        node: setting.node,
        limits: DEFAULT_LIMITS,
        returnBytes: RETURN_BYTES,
        allowHosts: setting.hosts
      },
      skills: setting.skills
    }
  }
}

/** The boot warning of a `SKILLS_RUN` this host cannot honour. */
export const unavailableWarning = (reason: string): string =>
  `SKILLS_RUN is set, but no skill script can run on this host: ${reason}. The skills are mounted with read_file only.`
