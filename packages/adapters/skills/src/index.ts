/**
 * `@plugboard/skills` — Agent Skills folders (a `SKILL.md` with YAML front matter) as
 * plugins. What a skill becomes in the catalog is core's rule (`CatalogSource`); this adapter
 * reads folders, and runs a skill's scripts in a bubblewrap sandbox when the operator allows it
 * (docs/skills-that-run.md).
 */
export { type AllowedHost, type ParsedAllowHosts, parseAllowHosts } from "./AllowHosts.js"
export { READ_FILE_TOOL } from "./ReadFile.js"
export { listScripts, RUN_SCRIPT_TOOL, type ScriptRunner } from "./RunScript.js"
export {
  DEFAULT_LIMITS,
  findBwrap,
  probeSandbox,
  runInSandbox,
  type SandboxLimits,
  type SandboxRequest,
  type SandboxResult,
  SCRATCH_MOUNT,
  SKILL_MOUNT,
  type StopReason
} from "./Sandbox.js"
export { DESCRIPTION_MAX, NAME_MAX } from "./SkillFile.js"
export {
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_GUIDE_BYTES,
  type LoadedSkills,
  type LoadSkillsOptions,
  loadSkills,
  SKILL_FILE
} from "./Skills.js"
export type { ScratchFile } from "./Tar.js"
