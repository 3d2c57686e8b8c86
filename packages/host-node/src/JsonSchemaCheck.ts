/**
 * The JSON Schema check of client tools' argument schemas (core's `ClientTools.SchemaChecker`),
 * with Ajv 8: a schema must validate against its dialect's meta-schema AND compile (which refuses
 * what the meta-schema cannot see: a `pattern` that is no regular expression, a `$ref` that
 * resolves to nothing; no remote schema is ever fetched). The dialect is the schema's `$schema`:
 * draft-07 when absent, 2019-09 or 2020-12 when named; any other is refused.
 *
 * Strict mode is off: providers' own keywords (`strict`, `x-…`, unknown `format`s) are fine, but a
 * known keyword with a wrong value is not. Regular expressions are compiled without the `u` flag,
 * as ECMA-262 reads them by default, so an escape such as `\-` that providers accept is accepted.
 *
 * Why here and not in core: core is pure (it depends on `effect` only) and receives this checker.
 * Why the Node host and not the adapters: the HTTP route is its only caller, and Ajv compiles
 * with `new Function`, which hosts on edge runtimes may not allow.
 *
 * Cost: core bounds a schema's depth and size before it gets here (a deep schema would overflow
 * Ajv's recursion; compiling takes time in proportion to size), and the verdicts are cached by a
 * hash of the schema's JSON, so the same tools sent every turn are compiled once. Compiled
 * schemas are removed from Ajv at once: client schemas are never used to validate data here, and
 * Ajv would otherwise keep each one. A schema that declares an `$id` anywhere is checked by an Ajv
 * of its own, thrown away after: Ajv files schemas by `$id` (and removes them by it), so on the
 * shared instance a client's `$id` could shadow or delete the meta-schema every other client's
 * check relies on.
 */
import { createHash } from "node:crypto"
import type { ClientTools } from "@plugboard/core"
import { describe } from "@plugboard/core"
import { Ajv, type ErrorObject, type Options } from "ajv"
import { Ajv2019 } from "ajv/dist/2019.js"
import { Ajv2020 } from "ajv/dist/2020.js"

type Validator = Pick<Ajv, "validateSchema" | "compile" | "removeSchema" | "errors">

const OPTIONS: Options = {
  strict: false,
  validateFormats: false,
  unicodeRegExp: false,
  addUsedSchema: false,
  logger: false,
  // Client schemas are compiled to be checked, never run: skip the generated code's optimiser.
  code: { optimize: false }
}

const DIALECTS: ReadonlyArray<readonly [string, () => Validator]> = [
  ["http://json-schema.org/draft-07/schema", () => new Ajv(OPTIONS)],
  ["https://json-schema.org/draft/2019-09/schema", () => new Ajv2019(OPTIONS)],
  ["https://json-schema.org/draft/2020-12/schema", () => new Ajv2020(OPTIONS)]
]

/** What `makeJsonSchemaCheck` returns: the checker and its cache's size. */
export interface JsonSchemaCheck {
  readonly check: ClientTools.SchemaChecker
  /** Verdicts cached (one per distinct schema, at most `cacheSize`). */
  readonly cached: () => number
}

/** `/a/b must be …` from Ajv's first error on the schema. */
const describeError = (error: ErrorObject | undefined): string => {
  if (error === undefined) return "it does not match its meta-schema"
  const where = error.instancePath === "" ? "the schema" : error.instancePath
  const allowed = (error.params as { allowedValues?: unknown }).allowedValues
  const choices = Array.isArray(allowed) ? ` (${allowed.map((v) => JSON.stringify(v)).join(", ")})` : ""
  return `${where} ${error.message ?? `fails '${error.keyword}'`}${choices}`
}

const describeThrown = (error: unknown): string => {
  const message = describe(error)
  if (error instanceof SyntaxError) return `a pattern is not a valid regular expression: ${message}`
  if (error instanceof Error && error.constructor.name === "MissingRefError")
    return `a $ref ${message.replace(/^can't/, "cannot")}`
  return message
}

/** Whether an `$id` appears anywhere in the schema (core has bounded its size already). */
const declaresId = (schema: unknown): boolean => {
  const stack: Array<unknown> = [schema]
  while (stack.length > 0) {
    const node = stack.pop()
    if (node === null || typeof node !== "object") continue
    if (!Array.isArray(node) && Object.hasOwn(node, "$id")) return true
    stack.push(...(Array.isArray(node) ? node : Object.values(node)))
  }
  return false
}

/**
 * A checker of client tool schemas, with a cache of its verdicts (least recently used first out,
 * `cacheSize` entries; default 1,000). Never throws.
 */
export const makeJsonSchemaCheck = (options: { readonly cacheSize?: number } = {}): JsonSchemaCheck => {
  const cacheSize = options.cacheSize ?? 1_000
  const cache = new Map<string, string | undefined>()
  const validators = new Map<string, Validator>()

  const validatorFor = ($schema: unknown, isolated: boolean): Validator | string => {
    const uri = typeof $schema === "string" ? $schema.replace(/#$/, "") : DIALECTS[0]![0]
    const dialect = DIALECTS.find(([id]) => id === uri)
    if (dialect === undefined) {
      return `$schema '${String($schema)}' is not supported; use draft-07 (the default), 2019-09 or 2020-12`
    }
    if (isolated) return dialect[1]()
    let validator = validators.get(uri)
    if (validator === undefined) {
      validator = dialect[1]()
      validators.set(uri, validator)
    }
    return validator
  }

  const verdict = (schema: Readonly<Record<string, unknown>>): string | undefined => {
    const validator = validatorFor(schema.$schema, declaresId(schema))
    if (typeof validator === "string") return validator
    try {
      if (validator.validateSchema(schema) !== true) return describeError(validator.errors?.[0])
      validator.compile(schema)
      return undefined
    } catch (error) {
      return describeThrown(error)
    } finally {
      validator.removeSchema(schema)
    }
  }

  const check = (schema: Readonly<Record<string, unknown>>): string | undefined => {
    const key = createHash("sha256").update(JSON.stringify(schema)).digest("base64")
    if (cache.has(key)) {
      const hit = cache.get(key)
      cache.delete(key)
      cache.set(key, hit)
      return hit
    }
    const result = verdict(schema)
    cache.set(key, result)
    if (cache.size > cacheSize) cache.delete(cache.keys().next().value!)
    return result
  }

  return { check, cached: () => cache.size }
}

/** The process's checker (one cache for every request). */
export const jsonSchemaCheck: JsonSchemaCheck = makeJsonSchemaCheck()
