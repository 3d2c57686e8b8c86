/**
 * `@plugboard/skills` — Agent Skills folders (a `SKILL.md` with YAML front matter) as
 * plugins. What a skill becomes in the catalog is core's rule (`CatalogSource`); this adapter
 * reads folders.
 */
export { READ_FILE_TOOL } from "./ReadFile.js"
export { DESCRIPTION_MAX, NAME_MAX } from "./SkillFile.js"
export {
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_GUIDE_BYTES,
  type LoadedSkills,
  type LoadSkillsOptions,
  loadSkills,
  SKILL_FILE
} from "./Skills.js"
