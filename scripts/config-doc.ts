/**
 * docs/configuration.md, generated from the server's variable list (`VARIABLES` in
 * packages/host-node/src/Config.ts, which `plugboard --help` prints too), so the page cannot
 * drift from what the server reads: `pnpm docs:config` writes it, and host-node's
 * configurationDoc test fails when the committed page differs.
 */
import { writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { VARIABLES } from "../packages/host-node/src/Config.js"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..")

/** Where the page lives. */
export const CONFIGURATION_PAGE = join(ROOT, "docs/configuration.md")

// A cell's text, with the bar escaped (it would end the cell).
const cell = (text: string) => text.replace(/\|/g, "\\|")
// A default that is a value (no spaces: `<data>/users`, `plugboard:`) is code; prose stays prose.
const value = (text: string) => (/\s/.test(text) || text === "—" ? cell(text) : `\`${cell(text)}\``)

/** The page's text. */
export const configurationPage = (): string =>
  [
    "# Configuration",
    "",
    "<!-- Generated from VARIABLES (packages/host-node/src/Config.ts) by `pnpm docs:config`; do not edit. -->",
    "",
    "Every variable is optional; nothing set at all is the embedded default (no keys, no services).",
    "Manifests are validated before the environment, and every bad variable is reported at once, one",
    "line each (`[boot-error] ...`). `plugboard --help` prints this table too.",
    "",
    "| variable | default | meaning |",
    "|---|---|---|",
    ...VARIABLES.map((v) => `| \`${cell(v.name)}\` | ${value(v.default)} | ${cell(v.meaning)} |`),
    "",
    "The model variables are read by `@plugboard/models`: a missing key or a malformed URL stops boot",
    "with one line naming the variable (`OPENAI_API_KEY is required when LLM_PROVIDER=openai ...`).",
    "No provider's API is reachable from CI, so each real provider (openai, openai-compatible,",
    "anthropic, ollama) is tested end to end against a local server that speaks its wire, whole and",
    "streamed: the model built from these variables runs a full load-then-call turn, the server checks",
    "what it received (the tools of core's offer on each call, key, model, tool results), and each",
    "passes the `ChatModel` conformance suite (`@plugboard/testing`).",
    ""
  ].join("\n")

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(CONFIGURATION_PAGE, configurationPage())
  console.log(`${CONFIGURATION_PAGE} written`)
}
