/**
 * Developer plugins: code search, issue tracker, CI, feature flags and dependency versions.
 * All answer from fixed tables; writes go to the catalog's store.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import { type ExampleContext, intBetween, lookup, search, text } from "./support.js"

const CODE = [
  {
    repo: "plugboard",
    path: "packages/core/src/Catalog.ts",
    line: 283,
    symbol: "make",
    snippet: "export const make = (plugins"
  },
  {
    repo: "plugboard",
    path: "packages/core/src/Offer.ts",
    line: 85,
    symbol: "offer",
    snippet: "export const offer = (catalog"
  },
  {
    repo: "plugboard",
    path: "packages/core/src/Tier1.ts",
    line: 44,
    symbol: "render",
    snippet: "export const render = (catalog"
  },
  {
    repo: "billing-api",
    path: "src/invoices/router.ts",
    line: 17,
    symbol: "createInvoice",
    snippet: "router.post('/invoices'"
  },
  {
    repo: "billing-api",
    path: "src/auth/session.ts",
    line: 42,
    symbol: "refreshToken",
    snippet: "async function refreshToken("
  }
] as const

const codeSearch = () =>
  definePlugin({
    name: "code-search",
    manifest: {
      title: "Code Search",
      summary: "Searches source code across repositories and finds where a function or symbol is defined.",
      whenToUse: [
        "The user asks where something is implemented or referenced in the source code.",
        "The user asks where a function, class or symbol is defined in a repository."
      ],
      whenNotToUse: ["Reading product or API documentation: use docs-search."],
      examples: [
        {
          user: "Where do we handle refreshToken in the code?",
          tool: "find_symbol",
          args: { symbol: "refreshToken" }
        },
        {
          user: "Search the billing-api repo source for invoices.",
          tool: "search_code",
          args: { query: "invoices", repo: "billing-api" }
        }
      ],
      tags: ["code", "source", "grep", "symbol", "repository"],
      category: "integration",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "search_code",
        description: "Lines of code matching words, optionally in one repository.",
        input: Schema.Struct({
          query: text("Words to find"),
          repo: Schema.optional(text("Repository name", 100))
        }),
        handler: ({ query, repo }) => ({
          query,
          hits: search(CODE, query, ["path", "snippet", "symbol"]).filter(
            (c) => repo === undefined || c.repo === repo
          )
        })
      }),
      defineTool({
        name: "find_symbol",
        description: "Where a function, class or constant is defined (repository, file, line).",
        input: Schema.Struct({ symbol: text("Symbol name", 100) }),
        handler: ({ symbol }) => lookup(CODE, "symbol", symbol, "symbol")
      })
    ]
  })

interface Issue {
  readonly key: string
  readonly title: string
  readonly status: "open" | "in-progress" | "closed"
  readonly priority: "low" | "medium" | "high"
  readonly assignee: string
}

const ISSUES: ReadonlyArray<Issue> = [
  {
    key: "PB-101",
    title: "Login fails with expired token",
    status: "open",
    priority: "high",
    assignee: "Eli"
  },
  {
    key: "PB-102",
    title: "Crash when exporting large CSV",
    status: "in-progress",
    priority: "medium",
    assignee: "Dev"
  },
  { key: "PB-103", title: "Typo on settings page", status: "closed", priority: "low", assignee: "Ana" }
]

const Priority = Schema.Literal("low", "medium", "high")

const issueTracker = ({ store }: ExampleContext) => {
  const all = () => [...ISSUES, ...store.list<Issue>("issues")]
  return definePlugin({
    name: "issue-tracker",
    manifest: {
      title: "Issue Tracker",
      summary: "Software bug tracker: look up, search and file bug reports for the engineering team.",
      whenToUse: [
        "The user asks about a bug or issue by key, e.g. PB-101.",
        "The user wants to search open bugs or crashes in the issue tracker.",
        "The user wants to report or file a new bug."
      ],
      whenNotToUse: [
        "A customer's helpdesk request: use support-tickets.",
        "Non-engineering to-dos and project tasks: use project-tasks."
      ],
      examples: [
        { user: "What's the status of bug PB-101?", tool: "get_issue", args: { key: "PB-101" } },
        { user: "Are there open bugs about crashes?", tool: "search_issues", args: { query: "crash" } },
        {
          user: "File a bug: the export button does nothing on Safari, high priority.",
          tool: "create_issue",
          args: { title: "Export button does nothing on Safari", priority: "high" }
        }
      ],
      tags: ["bugs", "issues", "issue-tracker", "engineering"],
      category: "integration",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "get_issue",
        description: "One issue by key: title, status, priority, assignee.",
        input: Schema.Struct({ key: text("Issue key, e.g. PB-101", 20) }),
        handler: ({ key }) => lookup(all(), "key", key, "issue")
      }),
      defineTool({
        name: "search_issues",
        description: "Issues whose title contains the words; closed ones excluded unless asked.",
        input: Schema.Struct({
          query: text("Words in the title"),
          includeClosed: Schema.optionalWith(Schema.Boolean, { default: () => false })
        }),
        handler: ({ query, includeClosed }) => ({
          query,
          issues: search(all(), query, ["title"]).filter((i) => includeClosed || i.status !== "closed")
        })
      }),
      defineTool({
        name: "create_issue",
        description: "File a new open issue.",
        input: Schema.Struct({ title: text("Short summary of the bug", 200), priority: Priority }),
        handler: ({ title, priority }) => {
          const issue: Issue = {
            key: store.nextId("PB", 200),
            title,
            priority,
            status: "open",
            assignee: "unassigned"
          }
          return { created: store.add("issues", issue) }
        }
      })
    ]
  })
}

const RUNS = [
  {
    repo: "plugboard",
    branch: "main",
    run: 481,
    status: "passed",
    durationS: 312,
    failedJobs: [] as string[]
  },
  {
    repo: "plugboard",
    branch: "feature/ledger",
    run: 482,
    status: "failed",
    durationS: 198,
    failedJobs: ["test (node 20)"]
  },
  {
    repo: "billing-api",
    branch: "main",
    run: 77,
    status: "running",
    durationS: 45,
    failedJobs: [] as string[]
  }
] as const

const LOGS: Record<number, string> = {
  482: "FAIL packages/core/test/CreditLedger.test.ts > deduct never goes negative\nExpected 0, received -5"
}

const ciStatus = () =>
  definePlugin({
    name: "ci-status",
    manifest: {
      title: "CI Status",
      summary: "Continuous integration: latest pipeline run of a branch and why a build failed.",
      whenToUse: [
        "The user asks whether the CI build or pipeline passed on a branch.",
        "The user asks why a CI run failed or wants its failing test log."
      ],
      examples: [
        {
          user: "Did CI pass on main for plugboard?",
          tool: "pipeline_status",
          args: { repo: "plugboard", branch: "main" }
        },
        { user: "Why did build 482 fail?", tool: "build_log", args: { run: 482 } }
      ],
      tags: ["ci", "build", "pipeline", "tests"],
      category: "observability",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "pipeline_status",
        description: "The latest CI run of a branch: status, duration, failed jobs.",
        input: Schema.Struct({ repo: text("Repository", 100), branch: text("Branch", 200) }),
        handler: ({ repo, branch }) => {
          const run = RUNS.find((r) => r.repo === repo && r.branch === branch)
          if (run === undefined)
            throw new Error(
              `No CI runs for ${repo}@${branch}. Known: ${RUNS.map((r) => `${r.repo}@${r.branch}`).join(", ")}.`
            )
          return run
        }
      }),
      defineTool({
        name: "build_log",
        description: "The failure excerpt of a CI run's log.",
        input: Schema.Struct({ run: intBetween(1, 1e9, "Run number") }),
        handler: ({ run }) => {
          const found = RUNS.find((r) => r.run === run)
          if (found === undefined) throw new Error(`No CI run #${run}.`)
          return { run, status: found.status, log: LOGS[run] ?? "No failures in this run." }
        }
      })
    ]
  })

interface Flag {
  readonly key: string
  readonly environment: "staging" | "production"
  enabled: boolean
  readonly rolloutPercent: number
}

const FLAGS: ReadonlyArray<Flag> = [
  { key: "new-checkout", environment: "staging", enabled: true, rolloutPercent: 100 },
  { key: "new-checkout", environment: "production", enabled: true, rolloutPercent: 20 },
  { key: "dark-mode", environment: "production", enabled: false, rolloutPercent: 0 }
]

const Environment = Schema.Literal("staging", "production")

const featureFlags = ({ store }: ExampleContext) => {
  const flags = () => {
    const list = store.list<Flag>("flags")
    if (list.length === 0) list.push(...FLAGS.map((f) => ({ ...f })))
    return list
  }
  const find = (key: string, environment: string) => {
    const flag = flags().find((f) => f.key === key && f.environment === environment)
    if (flag === undefined) throw new Error(`No feature flag '${key}' in ${environment}.`)
    return flag
  }
  return definePlugin({
    name: "feature-flags",
    manifest: {
      title: "Feature Flags",
      summary: "Feature flag toggles per environment: check, list, and switch a flag on or off.",
      whenToUse: [
        "The user asks whether a feature flag is enabled in staging or production.",
        "The user wants to turn a feature flag on or off, or asks for its rollout percentage."
      ],
      examples: [
        {
          user: "Is the new-checkout feature flag on in production?",
          tool: "get_flag",
          args: { key: "new-checkout", environment: "production" }
        },
        {
          user: "List the feature flags in production.",
          tool: "list_flags",
          args: { environment: "production" }
        },
        {
          user: "Turn on the dark-mode flag in production.",
          tool: "set_flag",
          args: { key: "dark-mode", environment: "production", enabled: true }
        }
      ],
      tags: ["feature-flags", "toggle", "rollout", "release"],
      category: "automation",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "get_flag",
        description: "A flag's state and rollout percentage in one environment.",
        input: Schema.Struct({ key: text("Flag key", 100), environment: Environment }),
        handler: ({ key, environment }) => find(key, environment)
      }),
      defineTool({
        name: "list_flags",
        description: "Every flag of an environment.",
        input: Schema.Struct({ environment: Environment }),
        handler: ({ environment }) => ({
          environment,
          flags: flags().filter((f) => f.environment === environment)
        })
      }),
      defineTool({
        name: "set_flag",
        description: "Enable or disable a flag in one environment.",
        input: Schema.Struct({
          key: text("Flag key", 100),
          environment: Environment,
          enabled: Schema.Boolean
        }),
        handler: ({ key, environment, enabled }) => {
          const flag = find(key, environment)
          const previous = flag.enabled
          flag.enabled = enabled
          return { ...flag, previous }
        }
      })
    ]
  })
}

const PACKAGES = [
  { ecosystem: "npm", name: "effect", latest: "3.22.4", released: "2025-05-20", license: "MIT" },
  { ecosystem: "npm", name: "vitest", latest: "4.1.12", released: "2025-05-18", license: "MIT" },
  { ecosystem: "pypi", name: "requests", latest: "2.32.3", released: "2024-05-29", license: "Apache-2.0" },
  {
    ecosystem: "crates",
    name: "serde",
    latest: "1.0.219",
    released: "2025-03-09",
    license: "MIT OR Apache-2.0"
  }
] as const

const parse = (v: string): ReadonlyArray<number> =>
  v
    .split(/[.-]/)
    .slice(0, 3)
    .map((n) => Number.parseInt(n, 10) || 0)

const dependencyVersions = () =>
  definePlugin({
    name: "dependency-versions",
    manifest: {
      title: "Dependency Versions",
      summary: "Latest released version of npm, PyPI and crates packages, and how far behind a version is.",
      whenToUse: [
        "The user asks for the latest version of a library or package (npm, PyPI, crates).",
        "The user asks whether their dependency version is outdated and if the upgrade is major."
      ],
      examples: [
        {
          user: "What's the latest version of the effect package on npm?",
          tool: "latest_version",
          args: { name: "effect" }
        },
        {
          user: "Is version 2.28.0 of requests outdated?",
          tool: "check_outdated",
          args: { name: "requests", version: "2.28.0" }
        }
      ],
      tags: ["npm", "pypi", "dependencies", "semver", "outdated"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "latest_version",
        description: "Latest version, release date and license of a package.",
        input: Schema.Struct({ name: text("Package name", 214) }),
        handler: ({ name }) => lookup(PACKAGES, "name", name, "package")
      }),
      defineTool({
        name: "check_outdated",
        description: "Compares a version to the latest: up to date, patch, minor or major upgrade.",
        input: Schema.Struct({
          name: text("Package name", 214),
          version: text("Installed version, e.g. 1.2.3", 50)
        }),
        handler: ({ name, version }) => {
          const pkg = lookup(PACKAGES, "name", name, "package")
          const [a, b] = [parse(version), parse(pkg.latest)]
          const upgrade =
            a[0] !== b[0] ? "major" : a[1] !== b[1] ? "minor" : a[2] !== b[2] ? "patch" : "up-to-date"
          return { name: pkg.name, installed: version, latest: pkg.latest, upgrade }
        }
      })
    ]
  })

/** Developer plugins. */
export const devtoolsPlugins = (ctx: ExampleContext): ReadonlyArray<Plugin> => [
  codeSearch(),
  issueTracker(ctx),
  ciStatus(),
  featureFlags(ctx),
  dependencyVersions()
]
