/**
 * Exact tokens per turn (o200k, js-tiktoken with bundled ranks) as the catalog grows: a turn with
 * nothing loaded and with 5 plugins loaded, against binding every plugin up front (its tools,
 * prompt and operating guide), at 50, 500 and 5,000 on-demand plugins plus 3 always-tier plugins. Costs come from core's `TokenBudget`
 * (system prompt + Tier-1 block + offered tool schemas + meta-tools); the catalog is generated
 * deterministically but shaped like real plugins: 2–4 tools each, Effect Schema inputs with
 * described fields, manifests with whenToUse lines and examples.
 */

import { Catalog, type Plugin, type PluginTool, TokenBudget, TokenCounter } from "@plugboard/core"
import { loadTiktokenCounter } from "@plugboard/tokenizers"
import { Schema } from "effect"

/** Deterministic PRNG (mulberry32): every run measures the same catalog. */
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

interface Domain {
  readonly slug: string
  readonly title: string
  /** Singular and plural of what the plugin manages. */
  readonly item: string
  readonly items: string
  readonly system: string
  readonly category: "data" | "communication" | "automation" | "integration" | "observability"
  readonly when: ReadonlyArray<string>
}

const DOMAINS: ReadonlyArray<Domain> = [
  {
    slug: "crm",
    title: "CRM",
    item: "contact",
    items: "contacts",
    system: "the CRM",
    category: "integration",
    when: [
      "Looking up or updating a customer, lead or account.",
      "Logging a call or meeting with a customer."
    ]
  },
  {
    slug: "invoicing",
    title: "Invoicing",
    item: "invoice",
    items: "invoices",
    system: "the accounting ledger",
    category: "data",
    when: ["Creating, sending or chasing an invoice.", "Questions about what a customer owes."]
  },
  {
    slug: "calendar",
    title: "Calendar",
    item: "event",
    items: "events",
    system: "the user's calendar",
    category: "automation",
    when: ["Scheduling, moving or cancelling a meeting.", "Checking availability on a given day."]
  },
  {
    slug: "tickets",
    title: "Support Tickets",
    item: "ticket",
    items: "tickets",
    system: "the help desk",
    category: "communication",
    when: ["A customer problem that needs a support ticket.", "Checking the status of a reported issue."]
  },
  {
    slug: "repo",
    title: "Code Repository",
    item: "pull request",
    items: "pull requests",
    system: "the git host",
    category: "integration",
    when: ["Reviewing, opening or merging a pull request.", "Finding who changed a file and why."]
  },
  {
    slug: "shipping",
    title: "Shipping",
    item: "shipment",
    items: "shipments",
    system: "the carrier's API",
    category: "data",
    when: ["Tracking a parcel or estimating delivery.", "Creating a shipping label."]
  },
  {
    slug: "hr",
    title: "People",
    item: "employee record",
    items: "employee records",
    system: "the HR system",
    category: "data",
    when: ["Questions about leave balances, managers or teams.", "Onboarding or offboarding an employee."]
  },
  {
    slug: "docs",
    title: "Documents",
    item: "document",
    items: "documents",
    system: "the document store",
    category: "data",
    when: ["Finding, summarising or sharing a document.", "Creating a document from a template."]
  },
  {
    slug: "metrics",
    title: "Metrics",
    item: "time series",
    items: "time series",
    system: "the metrics backend",
    category: "observability",
    when: ["Questions about latency, error rates or traffic.", "Comparing a metric between two periods."]
  },
  {
    slug: "alerts",
    title: "On-call Alerts",
    item: "incident",
    items: "incidents",
    system: "the paging service",
    category: "observability",
    when: ["Acknowledging or escalating an incident.", "Who is on call right now."]
  },
  {
    slug: "payments",
    title: "Payments",
    item: "payment",
    items: "payments",
    system: "the payment processor",
    category: "integration",
    when: ["Refunding, capturing or looking up a payment.", "Investigating a failed charge."]
  },
  {
    slug: "inventory",
    title: "Inventory",
    item: "stock item",
    items: "stock items",
    system: "the warehouse system",
    category: "data",
    when: ["Checking stock levels or reorder points.", "Moving stock between warehouses."]
  }
]

const VENDORS = [
  "acme",
  "globex",
  "initech",
  "umbrella",
  "hooli",
  "stark",
  "wayne",
  "tyrell",
  "cyberdyne",
  "soylent"
]

const Limit = Schema.optional(
  Schema.Int.pipe(Schema.between(1, 100)).annotations({
    description: "Maximum number of results to return (default 20)."
  })
)
const Cursor = Schema.optional(
  Schema.String.annotations({ description: "Opaque pagination cursor from a previous call." })
)
const Since = Schema.optional(
  Schema.String.annotations({ description: "ISO 8601 date-time; only return items changed after it." })
)

/** The tools a plugin of `d` may register; each plugin takes 2–4 of them. */
const toolTemplates = (
  d: Domain
): ReadonlyArray<Omit<PluginTool, "name" | "handler"> & { readonly verb: string }> => {
  const Id = Schema.String.annotations({
    description: `Identifier of the ${d.item}, as returned by search_${d.slug}.`
  })
  return [
    {
      verb: "search",
      description: `Search ${d.items} in ${d.system} by free text and filters; returns ids, titles and last-modified times.`,
      input: Schema.Struct({
        query: Schema.String.annotations({
          description: `Words to match against ${d.item} titles and bodies.`
        }),
        status: Schema.optional(Schema.Literal("open", "pending", "closed", "archived")),
        since: Since,
        limit: Limit,
        cursor: Cursor
      })
    },
    {
      verb: "get",
      description: `Fetch one ${d.item} from ${d.system} with all its fields, history and links.`,
      input: Schema.Struct({
        id: Id,
        includeHistory: Schema.optional(
          Schema.Boolean.annotations({ description: "Also return the change history." })
        )
      })
    },
    {
      verb: "create",
      description: `Create a new ${d.item} in ${d.system}. Ask the user to confirm before calling.`,
      input: Schema.Struct({
        title: Schema.String.pipe(Schema.maxLength(200)).annotations({
          description: `Short title of the ${d.item}.`
        }),
        body: Schema.optional(
          Schema.String.annotations({ description: "Longer description, markdown allowed." })
        ),
        tags: Schema.optional(Schema.Array(Schema.String).annotations({ description: "Labels to attach." })),
        owner: Schema.optional(Schema.String.annotations({ description: "Email of the person responsible." }))
      })
    },
    {
      verb: "update",
      description: `Change fields of an existing ${d.item} in ${d.system}; fields left out are unchanged.`,
      input: Schema.Struct({
        id: Id,
        title: Schema.optional(Schema.String),
        status: Schema.optional(Schema.Literal("open", "pending", "closed", "archived")),
        comment: Schema.optional(Schema.String.annotations({ description: "Note recorded with the change." }))
      })
    },
    {
      verb: "export",
      description: `Export ${d.items} matching a filter from ${d.system} as CSV or JSON and return a download link.`,
      input: Schema.Struct({
        format: Schema.Literal("csv", "json"),
        since: Since,
        until: Schema.optional(Schema.String.annotations({ description: "ISO 8601 date-time upper bound." }))
      })
    }
  ]
}

/** One realistic on-demand plugin; `i` makes names unique across the catalog. */
const makePlugin = (i: number, next: () => number): Plugin => {
  const d = DOMAINS[i % DOMAINS.length]!
  const vendor = VENDORS[Math.floor(i / DOMAINS.length) % VENDORS.length]!
  const name = `${d.slug}-${vendor}-${i}`
  const templates = [...toolTemplates(d)].sort(() => next() - 0.5).slice(0, 2 + Math.floor(next() * 3))
  const tools: Array<PluginTool> = templates.map(({ verb, ...t }) => ({
    ...t,
    name: `${verb}_${d.slug}_${i}`,
    handler: () => ({ ok: true })
  }))
  const vendorTitle = `${vendor[0]!.toUpperCase()}${vendor.slice(1)}`
  return {
    name,
    manifest: {
      title: `${vendorTitle} ${d.title}`,
      summary: `${d.title} for ${vendorTitle}: read and manage ${d.items} in ${d.system}.`,
      whenToUse: [...d.when],
      whenNotToUse: [`Anything not about ${d.items}.`],
      examples: [{ user: `Find the ${d.item} about the Q3 renewal`, tool: tools[0]!.name, args: {} }],
      tags: [d.slug, vendor],
      category: d.category,
      visibility: "on-demand"
    },
    tools
  }
}

/** Three always-tier plugins for the Tier-1 block (docs/spec/tiers.md#the-tier-1-block). */
const alwaysPlugins = (): ReadonlyArray<Plugin> =>
  [
    ["memory", "Memory", "Durable memory across conversations: remember and recall facts about the user."],
    ["skills", "Skills", "Discover and run skill capsules published for this oracle."],
    [
      "user-preferences",
      "User Preferences",
      "Read and update the user's language, units and tone preferences."
    ]
  ].map(([name, title, summary]) => ({
    name: name!,
    manifest: {
      title: title!,
      summary: summary!,
      whenToUse: [`When the conversation needs ${title!.toLowerCase()}.`],
      visibility: "always" as const
    },
    tools: [
      {
        name: `${name!.replace(/-/g, "_")}_read`,
        description: `Read from ${title!.toLowerCase()}.`,
        input: Schema.Struct({ key: Schema.String.annotations({ description: "What to read." }) }),
        handler: () => null
      },
      {
        name: `${name!.replace(/-/g, "_")}_write`,
        description: `Write to ${title!.toLowerCase()}.`,
        input: Schema.Struct({ key: Schema.String, value: Schema.String }),
        handler: () => null
      }
    ]
  }))

/** `n` on-demand plugins plus the 3 always-tier ones, the same for the same `n` and `seed`. */
export const generatePlugins = (n: number, seed = 42): ReadonlyArray<Plugin> => {
  const next = rng(seed)
  return [...alwaysPlugins(), ...Array.from({ length: n }, (_, i) => makePlugin(i, next))]
}

/** A realistic base system prompt (identity, style, safety), the same at every size. */
const BASE_PROMPT = [
  "You are Oracle, an assistant for the operations team of a mid-sized company.",
  "Answer concisely and cite the tool output you relied on. When a request is ambiguous, ask one",
  "clarifying question. Never invent identifiers, amounts or dates: look them up with a tool.",
  "Before creating, updating or deleting anything, restate what you will do and wait for the",
  "user's confirmation. Use the user's language and units."
].join(" ")

const SIZES = [50, 500, 5_000] as const
const LOADED = 5

const pad = (s: string | number, n: number) => String(s).padStart(n)

export default async () => {
  const counter = await loadTiktokenCounter("o200k")
  const rows: Array<ReadonlyArray<string | number>> = []
  for (const n of SIZES) {
    const catalog = Catalog.unsafeMake(generatePlugins(n))
    const onDemand = catalog.entries.filter((e) => e.visibility === "on-demand")
    const tools = catalog.entries.reduce((sum, e) => sum + e.tools.length, 0)
    // Five plugins of five different domains, the same at every size.
    const loaded = onDemand.slice(0, LOADED).map((e) => e.name)
    const started = performance.now()
    const nothing = TokenBudget.turnCost({ catalog, loadedPlugins: [], basePrompt: BASE_PROMPT, counter })
    const withFive = TokenBudget.turnCost({
      catalog,
      loadedPlugins: loaded,
      basePrompt: BASE_PROMPT,
      counter
    })
    const report = TokenBudget.budgetReport(catalog, { basePrompt: BASE_PROMPT, counter, k: LOADED })
    const ms = performance.now() - started
    rows.push([
      onDemand.length,
      tools,
      nothing.total,
      withFive.total,
      report.allBound.total,
      `${(report.allBound.total / nothing.total).toFixed(1)}x`,
      `${(report.allBound.total / withFive.total).toFixed(1)}x`,
      ms.toFixed(0)
    ])
  }
  const header = [
    "on-demand",
    "tools",
    "nothing loaded",
    `${LOADED} loaded`,
    "every plugin bound",
    "bound/nothing",
    `bound/${LOADED}`,
    "ms"
  ]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)))
  console.log(
    `exact tokens per turn, ${counter.name} (system prompt + Tier-1 + meta-tools + offered tool schemas);`
  )
  console.log(
    `catalogs also hold 3 always-tier plugins (2 tools each); "ms" = time to count all three columns`
  )
  console.log(header.map((h, i) => pad(h, widths[i]!)).join("  "))
  for (const r of rows) console.log(r.map((c, i) => pad(c, widths[i]!)).join("  "))
  // The same two turns with core's heuristic counter, to show how far the offline estimate is.
  const small = Catalog.unsafeMake(generatePlugins(SIZES[0]))
  const five = small.entries
    .filter((e) => e.visibility === "on-demand")
    .slice(0, LOADED)
    .map((e) => e.name)
  const both = [[] as ReadonlyArray<string>, five].map((loadedPlugins) => {
    const exact = TokenBudget.turnCost({
      catalog: small,
      loadedPlugins,
      basePrompt: BASE_PROMPT,
      counter
    }).total
    const rough = TokenBudget.turnCost({
      catalog: small,
      loadedPlugins,
      basePrompt: BASE_PROMPT,
      counter: TokenCounter.heuristic
    }).total
    return `${rough} vs ${exact} exact (${rough >= exact ? "+" : ""}${(((rough - exact) / exact) * 100).toFixed(1)}%)`
  })
  console.log(`core's heuristic counter: nothing loaded ${both[0]}, ${LOADED} loaded ${both[1]}`)
  const firsts = new Set(rows.map((r) => r[2]))
  console.log(
    firsts.size === 1
      ? `nothing loaded costs the same ${rows[0]![2]} tokens at every catalog size (the claim of docs/spec/token-budget.md holds)`
      : `WARNING: the nothing-loaded cost varies with catalog size: ${[...firsts].join(", ")}`
  )
}
