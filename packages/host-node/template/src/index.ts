/**
 * The module `plugboard serve` and `plugboard inspect` load: it exports the project's plugins.
 * Add a plugin by writing it beside tip.ts and listing it here.
 */
import { tip } from "./tip.js"

export const plugins = [tip]
