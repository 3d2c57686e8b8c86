/**
 * Which tool calls wait for their user's approval before they run (issue 40, docs/waiting.md).
 *
 * A tool needs approval when its definition says so (`requiresApproval: true` on a plugin's
 * tool, checked at boot) or when the operator lists it (`APPROVAL_TOOLS`): an entry
 * `<plugin>/<tool>` names one tool, `<plugin>` every tool of that plugin. An MCP tool whose
 * annotations say `destructiveHint: true` needs approval too, unless the operator turned that
 * off (`APPROVAL_MCP_DESTRUCTIVE=off`: `OperatorList.destructive` false). The rule lives here,
 * once; the agent loop asks it for each call it is about to run.
 */
import { Either } from "effect"

/** The operator's list of tools that need approval, as parsed (`parseOperatorList`). */
export interface OperatorList {
  /** Plugins every tool of which needs approval. */
  readonly plugins: ReadonlySet<string>
  /** Single tools, as `<plugin>/<tool>`. */
  readonly tools: ReadonlySet<string>
  /**
   * Whether a tool its source marks destructive (MCP's `destructiveHint: true`) needs approval;
   * absent is true. The operator turns it off with `APPROVAL_MCP_DESTRUCTIVE=off`.
   */
  readonly destructive?: boolean | undefined
}

/** No tool listed by the operator. */
export const NONE: OperatorList = { plugins: new Set(), tools: new Set() }

const NAME = /^[A-Za-z0-9_-]{1,64}$/
const PLUGIN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/**
 * Parses the operator's comma-separated list (`<plugin>` or `<plugin>/<tool>` entries, blanks
 * around entries ignored). Left with a sentence naming the first bad entry.
 */
export const parseOperatorList = (text: string): Either.Either<OperatorList, string> => {
  const plugins = new Set<string>()
  const tools = new Set<string>()
  for (const raw of text.split(",")) {
    const entry = raw.trim()
    if (entry === "") continue
    const [plugin, tool, extra] = entry.split("/")
    if (
      plugin === undefined ||
      !PLUGIN.test(plugin) ||
      extra !== undefined ||
      (tool !== undefined && !NAME.test(tool))
    )
      return Either.left(
        `'${entry.slice(0, 80)}' is not a plugin name (kebab-case) or <plugin>/<tool> (a tool name is 1-64 letters, digits, '_' or '-')`
      )
    if (tool === undefined) plugins.add(plugin)
    else tools.add(`${plugin}/${tool}`)
  }
  return Either.right({ plugins, tools })
}

/** A tool as the rule sees it: its plugin, its name, and what its definition says. */
export interface ToolRef {
  readonly plugin: string
  readonly name: string
  readonly requiresApproval?: boolean | undefined
  /** Its source says it may destroy or overwrite things (MCP's `destructiveHint: true`). */
  readonly destructiveHint?: boolean | undefined
}

/** Whether a call to `tool` waits for its user's approval. */
export const needsApproval = (tool: ToolRef, operator: OperatorList): boolean =>
  tool.requiresApproval === true ||
  (tool.destructiveHint === true && operator.destructive !== false) ||
  operator.plugins.has(tool.plugin) ||
  operator.tools.has(`${tool.plugin}/${tool.name}`)

/** Why the call waits, as the approval request's `reason` says it. */
export const reasonOf = (tool: ToolRef, operator: OperatorList = NONE): string =>
  tool.requiresApproval === true
    ? `the tool '${tool.name}' of '${tool.plugin}' asks for approval before it runs`
    : tool.destructiveHint === true && operator.destructive !== false
      ? `the tool '${tool.name}' of '${tool.plugin}' is marked destructive by its server (destructiveHint)`
      : `the operator requires approval for '${tool.plugin}/${tool.name}'`
