/**
 * The boot report served at `GET /health/plugins` (docs/http-api.md): the catalog the server
 * booted, in the same versioned shape as `plugboard inspect --json` (docs/inspect-json-schema.md;
 * no budget, no eval), counted with the o200k tokenizer. Built once, on the first request.
 *
 * Without secrets: the report holds manifests, names and token counts, and the catalog's own
 * warnings (not the MCP config's, which name commands and URLs); every string still goes through
 * `redact`, which masks what a reason or a warning could carry from a server's config: a URL's
 * user and password, its query string, a bearer token, and `NAME=value` pairs whose name says
 * key, token, secret or password.
 *
 * Tools a caller may not be told of (docs/plugins.md#requiring-capabilities: a tool whose own `requires`
 * they lack) are not named to them here either: `forView` leaves them out of `toolRequires` and of
 * the manifests' examples, for the caller's grants (none on the public route).
 */

import { Access, type Catalog, type TokenCounter } from "@plugboard/core"
import { buildReport, type InspectReport } from "./CatalogReport.js"
import { defaultCounter } from "./CatalogWarnings.js"

const RULES: ReadonlyArray<readonly [RegExp, string]> = [
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, "$1***@"],
  [/\b([a-z][a-z0-9+.-]*:\/\/[^\s?#"']+)\?[^\s"'#]*/gi, "$1?***"],
  [/\b(bearer)\s+[A-Za-z0-9._~+/=-]+/gi, "$1 ***"],
  [/\b([A-Za-z0-9_]*(?:key|token|secret|password|passwd)[A-Za-z0-9_]*)\s*[=:]\s*[^\s,;"']+/gi, "$1=***"]
]

/** `text` with anything that looks like a credential masked. */
export const redactText = (text: string): string => {
  let out = text
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement)
  return out
}

/** A copy of `value` with every string redacted (`redactText`), at every depth. */
export const redact = <A>(value: A): A => {
  if (typeof value === "string") return redactText(value) as A
  if (Array.isArray(value)) return value.map(redact) as A
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = redact(v)
    return out as A
  }
  return value
}

/** The label of the report's `module` field: a server serves a catalog, not a module file. */
export const MODULE = "(served catalog)"

/** The boot report: `plugboard inspect --json`'s report shape. */
export type Report = InspectReport

/**
 * The boot report of `catalog`. `counter` defaults to o200k (the tokenizer `inspect` defaults to);
 * should its ranks fail to load, the heuristic counts instead (the report says which).
 */
export const make = async (
  catalog: Catalog.Catalog,
  counter?: TokenCounter.TokenCounterService
): Promise<InspectReport> => {
  const used = counter ?? (await defaultCounter())
  return redact(
    buildReport(catalog, {
      module: MODULE,
      counter: used,
      basePrompt: "",
      k: 5,
      budget: undefined,
      loaded: undefined,
      eval: false,
      queries: undefined
    })
  )
}

/**
 * The report as `view` may see it: the tools the view hides are not named (`toolRequires`, the
 * manifests' `examples`); counts and costs stay the catalog's. The report itself is unchanged.
 */
export const forView = (report: Report, view: Access.View): Report => {
  if (view.open) return report
  const hidden = view.hiddenTools
  return {
    ...report,
    plugins: report.plugins.map((p) => {
      const examples = p.manifest.examples
      const shown = Array.isArray(examples)
        ? Access.shownExamples(view, examples as ReadonlyArray<{ readonly tool?: unknown }>)
        : examples
      return {
        ...p,
        toolRequires: p.toolRequires.filter((t) => !hidden.has(t.tool)),
        manifest: shown === examples ? p.manifest : { ...p.manifest, examples: shown }
      }
    })
  }
}

/** The view the report is shaped for: the caller's grants, none when the route is public. */
export const viewFor = (catalog: Catalog.Catalog, grants: Access.Grants | undefined): Access.View =>
  Access.view(catalog, grants)
