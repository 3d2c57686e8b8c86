/**
 * `@plugboard/adapters/skills` — Agent Skills folders (a `SKILL.md` with YAML front matter) as
 * plugins. What a skill becomes in the catalog is core's rule (`CatalogSource`); this adapter
 * reads folders.
 */
export {}
