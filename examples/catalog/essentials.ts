/**
 * The plugins that are not plain on-demand ones, each showing one tier
 * (docs/spec/tiers.md#the-three-tiers):
 * - `notes` and `clock` are `always`: needed on nearly every turn, so they are bound at boot and
 *   listed in the Tier-1 block (kept to two, each with a one-line summary: every always plugin is
 *   paid for on every turn);
 * - `user-preferences` mixes tiers per tool: reading preferences is always offered, changing
 *   them needs `load_capability` (docs/spec/tiers.md#per-tool-override);
 * - `audit-log` is `silent`: never offered, never listed; it acts through middleware only (it
 *   records how many tools each model call was offered, and the usage the model reported) and
 *   serves the records on an HTTP route.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import { type ExampleContext, ExampleStore, text } from "./support.js"

/** A note saved by the `notes` plugin. */
interface Note {
  readonly id: string
  readonly text: string
  readonly tags: ReadonlyArray<string>
}

const notes = ({ store }: ExampleContext) =>
  definePlugin({
    name: "notes",
    manifest: {
      title: "Notes",
      summary: "Remembers facts the user asks you to keep, across conversations.",
      whenToUse: [
        "The user asks you to remember, note down or keep something for later.",
        "The user asks what they told you before, or to recall a saved note."
      ],
      whenNotToUse: ["Tasks with owners and due dates: use project-tasks."],
      examples: [
        {
          user: "Remember that my passport number ends in 4471.",
          tool: "save_note",
          args: { text: "Passport number ends in 4471", tags: ["travel"] }
        },
        {
          user: "What did I ask you to remember about my passport?",
          tool: "search_notes",
          args: { query: "passport" }
        }
      ],
      tags: ["memory", "notes", "remember", "recall"],
      category: "memory",
      visibility: "always",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "save_note",
        description: "Save a note for this user; it is kept across conversations.",
        input: Schema.Struct({
          text: text("What to remember", 1000),
          tags: Schema.optionalWith(Schema.Array(text("A short label", 40)), { default: () => [] })
        }),
        handler: ({ text, tags }, ctx) => {
          const id = store.nextId("note")
          return { saved: store.add<Note>(ExampleStore.forUser("notes", ctx.user.did), { id, text, tags }) }
        }
      }),
      defineTool({
        name: "search_notes",
        description: "Find this user's saved notes containing a word or tag.",
        input: Schema.Struct({ query: text("A word or tag to look for") }),
        handler: ({ query }, ctx) => {
          const q = query.toLowerCase()
          const all = store.list<Note>(ExampleStore.forUser("notes", ctx.user.did))
          const matches = all.filter(
            (n) => n.text.toLowerCase().includes(q) || n.tags.some((t) => t.toLowerCase() === q)
          )
          return { query, matches, total: all.length }
        }
      })
    ]
  })

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"] as const

const TimeZoneName = Schema.String.pipe(
  Schema.filter((tz) => {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: tz })
      return true
    } catch {
      return `Unknown IANA time zone '${tz}' (e.g. Europe/Berlin, America/New_York, UTC).`
    }
  })
).annotations({ description: "IANA time zone, e.g. Europe/Berlin; default UTC" })

const clock = ({ now }: ExampleContext) =>
  definePlugin({
    name: "clock",
    manifest: {
      title: "Clock",
      summary: "Today's date and the current time, and how many days until a date.",
      whenToUse: [
        "The user asks what time it is now, today's date or the day of the week.",
        "The user asks how many days are left until a date or deadline."
      ],
      whenNotToUse: ["Converting a given time between zones: use timezone."],
      examples: [
        { user: "What time is it right now?", tool: "current_time", args: {} },
        { user: "What's today's date?", tool: "current_time", args: {} },
        { user: "How many days until 2025-12-25?", tool: "days_until", args: { date: "2025-12-25" } }
      ],
      tags: ["clock", "date", "today", "now"],
      category: "core",
      visibility: "always",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "current_time",
        description: "The current date, time and weekday in a time zone.",
        input: Schema.Struct({ timeZone: Schema.optionalWith(TimeZoneName, { default: () => "UTC" }) }),
        handler: ({ timeZone }) => {
          const at = now()
          const parts = new Intl.DateTimeFormat("en-CA", {
            timeZone,
            year: "numeric",
            month: "2-digit",
            day: "2-digit",
            hour: "2-digit",
            minute: "2-digit",
            weekday: "long",
            hourCycle: "h23"
          }).formatToParts(at)
          const get = (type: string) => parts.find((p) => p.type === type)?.value ?? ""
          return {
            timeZone,
            date: `${get("year")}-${get("month")}-${get("day")}`,
            time: `${get("hour")}:${get("minute")}`,
            weekday: get("weekday"),
            iso: at.toISOString()
          }
        }
      }),
      defineTool({
        name: "days_until",
        description: "Whole days from today (UTC) until a date; negative when it has passed.",
        input: Schema.Struct({
          date: Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/)).annotations({
            description: "Target date (YYYY-MM-DD)"
          })
        }),
        handler: ({ date }) => {
          const target = Date.parse(`${date}T00:00:00Z`)
          if (Number.isNaN(target)) throw new Error(`'${date}' is not a calendar date.`)
          const today = now().toISOString().slice(0, 10)
          const days = Math.round((target - Date.parse(`${today}T00:00:00Z`)) / 86_400_000)
          return { today, date, days, weekday: WEEKDAYS[new Date(target).getUTCDay()] }
        }
      })
    ]
  })

/** The preference keys `user-preferences` knows, with their defaults. */
export const DEFAULT_PREFERENCES = {
  language: "en",
  units: "metric",
  currency: "EUR",
  tone: "neutral"
} as const

type PreferenceKey = keyof typeof DEFAULT_PREFERENCES

const userPreferences = ({ store }: ExampleContext) => {
  const read = (did: string): Record<PreferenceKey, string> => {
    const changes = store.list<{ key: PreferenceKey; value: string }>(
      ExampleStore.forUser("preferences", did)
    )
    const prefs: Record<PreferenceKey, string> = { ...DEFAULT_PREFERENCES }
    for (const c of changes) prefs[c.key] = c.value
    return prefs
  }
  return definePlugin({
    name: "user-preferences",
    manifest: {
      title: "User Preferences",
      summary: "The user's preferred language, units, currency and tone; read always, change on request.",
      whenToUse: [
        "Before formatting amounts, measures or replies, to respect the user's settings.",
        "The user wants prices shown in another currency, e.g. US dollars, from now on.",
        "The user wants another language, unit system or tone of reply from now on."
      ],
      examples: [
        { user: "Which units and currency do I use?", tool: "get_preferences", args: {} },
        {
          user: "From now on show prices in US dollars, please.",
          tool: "set_preference",
          args: { key: "currency", value: "USD" }
        },
        { user: "Reset my preferences to the defaults.", tool: "reset_preferences", args: {} }
      ],
      tags: ["preferences", "settings", "language", "units"],
      category: "core",
      visibility: "on-demand",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "get_preferences",
        description: "The user's preferences (language, units, currency, tone).",
        // Per-tool override: cheap and useful on every turn, so offered without a load.
        visibility: "always",
        input: Schema.Struct({}),
        handler: (_input, ctx) => read(ctx.user.did)
      }),
      defineTool({
        name: "set_preference",
        description: "Change one preference of the user.",
        input: Schema.Struct({
          key: Schema.Literal("language", "units", "currency", "tone"),
          value: text("New value, e.g. 'imperial', 'USD', 'fr', 'formal'", 40)
        }),
        handler: ({ key, value }, ctx) => {
          store.add(ExampleStore.forUser("preferences", ctx.user.did), { key, value })
          return read(ctx.user.did)
        }
      }),
      defineTool({
        name: "reset_preferences",
        description: "Restore every preference to its default.",
        input: Schema.Struct({}),
        handler: (_input, ctx) => {
          store.list(ExampleStore.forUser("preferences", ctx.user.did)).length = 0
          return read(ctx.user.did)
        }
      })
    ]
  })
}

/** One model call as the `audit-log` plugin recorded it. */
export interface AuditRecord {
  readonly did: string
  readonly sessionId: string
  /** How many tools the model was offered on this call (meta-tools included). */
  readonly offeredTools: number
  /** Input and output tokens, when the model reported usage (filled in by `afterModel`). */
  usage?: { readonly inputTokens: number; readonly outputTokens: number } | undefined
}

/**
 * How many model calls `audit-log` keeps (the most recent ones, across users): a server runs for
 * months, and an in-memory log that only grows is a leak however small each record is.
 */
export const AUDIT_LOG_LIMIT = 1_000

/**
 * The log holds up to a quarter more than `AUDIT_LOG_LIMIT` between trims: trimming it at every
 * model call moved a thousand entries each time (about 38 µs a turn in `pnpm bench server`).
 */
const AUDIT_LOG_SLACK = AUDIT_LOG_LIMIT / 4

/** The model calls `audit-log` recorded in `store`, oldest first (the last `AUDIT_LOG_LIMIT`). */
export const auditRecords = (store: ExampleStore): ReadonlyArray<AuditRecord> => {
  const records = store.list<AuditRecord>("audit-log")
  return records.length > AUDIT_LOG_LIMIT ? records.slice(-AUDIT_LOG_LIMIT) : records
}

const auditLog = ({ store }: ExampleContext): Plugin =>
  definePlugin({
    name: "audit-log",
    manifest: {
      title: "Audit Log",
      summary: "Records how many tools each model call was offered and the tokens it used.",
      tags: ["audit", "observability"],
      category: "observability",
      visibility: "silent",
      stability: "stable"
    },
    middlewares: [
      {
        name: "audit-log",
        beforeModel: (call, ctx) => {
          store.add<AuditRecord>("audit-log", {
            did: ctx.user.did,
            sessionId: ctx.session.id,
            offeredTools: call.tools.length
          })
          const records = store.list<AuditRecord>("audit-log")
          if (records.length > AUDIT_LOG_LIMIT + AUDIT_LOG_SLACK) {
            records.splice(0, records.length - AUDIT_LOG_LIMIT)
          }
        },
        afterModel: (result, ctx) => {
          const records = store.list<AuditRecord>("audit-log")
          // The record this call opened: the last one of this session.
          for (let i = records.length - 1; i >= 0; i--) {
            const r = records[i]!
            if (r.sessionId === ctx.session.id && r.did === ctx.user.did) {
              r.usage = result.usage
              break
            }
          }
        }
      }
    ],
    routes: [
      {
        method: "GET",
        path: "/audit-log",
        // Behind the auth pipeline: each user reads only their own records.
        handler: (request) => ({
          body: { records: auditRecords(store).filter((r) => r.did === request.userDid) }
        })
      }
    ]
  })

/** The always, mixed-visibility and silent plugins of the example catalog. */
export const essentialPlugins = (ctx: ExampleContext): ReadonlyArray<Plugin> => [
  notes(ctx),
  clock(ctx),
  userPreferences(ctx),
  auditLog(ctx)
]
