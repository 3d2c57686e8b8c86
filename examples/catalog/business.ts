/**
 * Office and back-office plugins: calendar, CRM, invoices, expenses, contacts, email drafts.
 * Fixture tables are small and fixed; tools that create something write to the catalog's store.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import {
  between,
  type ExampleContext,
  ExampleStore,
  intBetween,
  isoDate,
  lookup,
  round,
  search,
  text
} from "./support.js"

interface CalendarEvent {
  readonly id: string
  readonly title: string
  readonly date: string
  readonly start: string
  readonly minutes: number
  readonly attendees: ReadonlyArray<string>
}

const EVENTS: ReadonlyArray<CalendarEvent> = [
  {
    id: "ev-1",
    title: "Team stand-up",
    date: "2025-06-02",
    start: "09:30",
    minutes: 15,
    attendees: ["Ana", "Ben"]
  },
  {
    id: "ev-2",
    title: "Quarterly review",
    date: "2025-06-02",
    start: "14:00",
    minutes: 60,
    attendees: ["Chloe"]
  },
  { id: "ev-3", title: "Dentist", date: "2025-06-03", start: "08:00", minutes: 45, attendees: [] },
  {
    id: "ev-4",
    title: "Design sync",
    date: "2025-06-03",
    start: "11:00",
    minutes: 30,
    attendees: ["Dev", "Eli"]
  }
]

const toMinutes = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))
const toHhmm = (m: number): string =>
  `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`
const Hhmm = Schema.String.pipe(Schema.pattern(/^([01]\d|2[0-3]):[0-5]\d$/)).annotations({
  description: "Start time, HH:MM (24h)"
})

const calendar = ({ store }: ExampleContext) => {
  const eventsOn = (date: string, did: string) =>
    [...EVENTS, ...store.list<CalendarEvent>(ExampleStore.forUser("calendar", did))]
      .filter((e) => e.date === date)
      .sort((a, b) => a.start.localeCompare(b.start))
  return definePlugin({
    name: "calendar",
    manifest: {
      title: "Calendar",
      summary: "The user's calendar: list a day's events, schedule new ones, find a free slot.",
      whenToUse: [
        "The user asks what is on their calendar or agenda for a day.",
        "The user wants to schedule, book or add an appointment or meeting to the calendar.",
        "The user asks when they are free or busy on a day."
      ],
      whenNotToUse: [
        "Minutes or action items of a past meeting: use meeting-notes.",
        "Converting times between zones: use timezone."
      ],
      examples: [
        { user: "What's on my calendar on 2025-06-02?", tool: "list_events", args: { date: "2025-06-02" } },
        {
          user: "Schedule a call with Ben on 2025-06-03 at 15:00 for 30 minutes.",
          tool: "create_event",
          args: {
            title: "Call with Ben",
            date: "2025-06-03",
            start: "15:00",
            minutes: 30,
            attendees: ["Ben"]
          }
        },
        {
          user: "When am I free for an hour on 2025-06-02?",
          tool: "find_free_slot",
          args: { date: "2025-06-02", minutes: 60 }
        }
      ],
      tags: ["calendar", "agenda", "schedule", "appointment", "meeting"],
      category: "integration",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "list_events",
        description: "Events on the user's calendar for one day, in start order.",
        input: Schema.Struct({ date: isoDate("Day to list") }),
        handler: ({ date }, ctx) => ({ date, events: eventsOn(date, ctx.user.did) })
      }),
      defineTool({
        name: "create_event",
        description: "Add an event to the user's calendar.",
        input: Schema.Struct({
          title: text("Event title", 120),
          date: isoDate("Day of the event"),
          start: Hhmm,
          minutes: intBetween(5, 600, "Duration in minutes"),
          attendees: Schema.optionalWith(Schema.Array(text("Attendee name", 80)), { default: () => [] })
        }),
        handler: (input, ctx) => {
          const event = { id: store.nextId("ev", 100), ...input }
          return { created: store.add<CalendarEvent>(ExampleStore.forUser("calendar", ctx.user.did), event) }
        }
      }),
      defineTool({
        name: "find_free_slot",
        description: "First free slot of a given length between 09:00 and 18:00 on a day.",
        input: Schema.Struct({
          date: isoDate("Day to search"),
          minutes: intBetween(5, 540, "Slot length in minutes")
        }),
        handler: ({ date, minutes }, ctx) => {
          let cursor = toMinutes("09:00")
          for (const e of eventsOn(date, ctx.user.did)) {
            const start = toMinutes(e.start)
            if (start - cursor >= minutes) break
            cursor = Math.max(cursor, start + e.minutes)
          }
          const end = cursor + minutes
          return end <= toMinutes("18:00")
            ? { date, free: true, start: toHhmm(cursor), end: toHhmm(end) }
            : { date, free: false, reason: `No ${minutes}-minute slot between 09:00 and 18:00.` }
        }
      })
    ]
  })
}

const ACCOUNTS = [
  { company: "Acme Corp", owner: "Ana Silva", industry: "manufacturing", arr: 120_000, health: "green" },
  { company: "Globex", owner: "Ben Okafor", industry: "logistics", arr: 48_000, health: "amber" },
  { company: "Initech", owner: "Ana Silva", industry: "software", arr: 96_000, health: "red" }
] as const

const DEALS = [
  {
    id: "D-11",
    company: "Acme Corp",
    title: "Plant expansion licences",
    value: 40_000,
    stage: "negotiation"
  },
  { id: "D-12", company: "Globex", title: "Fleet tracking add-on", value: 12_000, stage: "proposal" },
  { id: "D-13", company: "Initech", title: "Renewal 2026", value: 96_000, stage: "qualification" },
  { id: "D-14", company: "Acme Corp", title: "Training package", value: 8_000, stage: "won" }
] as const

const Stage = Schema.Literal("qualification", "proposal", "negotiation", "won", "lost")

const crm = ({ store }: ExampleContext) =>
  definePlugin({
    name: "crm",
    manifest: {
      title: "CRM",
      summary: "Sales CRM: customer accounts, the deal pipeline and logged customer interactions.",
      whenToUse: [
        "The user asks about a customer account, its owner, revenue (ARR) or health.",
        "The user asks about sales deals, opportunities or the pipeline by stage.",
        "The user wants to log a sales call or interaction with a customer account."
      ],
      whenNotToUse: [
        "A person's phone number or email address: use contacts.",
        "Customer complaints and helpdesk requests: use support-tickets."
      ],
      examples: [
        {
          user: "Who owns the Globex account and how healthy is it?",
          tool: "find_account",
          args: { company: "Globex" }
        },
        { user: "Which sales deals are in negotiation?", tool: "list_deals", args: { stage: "negotiation" } },
        {
          user: "Log a sales call with the Initech account about their renewal.",
          tool: "log_interaction",
          args: { company: "Initech", note: "Renewal call" }
        }
      ],
      tags: ["crm", "sales", "deals", "pipeline", "accounts"],
      category: "integration",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "find_account",
        description: "A customer account: owner, industry, annual recurring revenue, health, open deals.",
        input: Schema.Struct({ company: text("Company name") }),
        handler: ({ company }) => {
          const account = lookup(ACCOUNTS, "company", company, "account")
          return { ...account, deals: DEALS.filter((d) => d.company === account.company) }
        }
      }),
      defineTool({
        name: "list_deals",
        description: "Deals in the sales pipeline, optionally only one stage, with the total value.",
        input: Schema.Struct({ stage: Schema.optional(Stage) }),
        handler: ({ stage }) => {
          const deals = DEALS.filter((d) => stage === undefined || d.stage === stage)
          return { stage: stage ?? "all", deals, totalValue: deals.reduce((s, d) => s + d.value, 0) }
        }
      }),
      defineTool({
        name: "log_interaction",
        description: "Record a call, meeting or email with a customer account.",
        input: Schema.Struct({ company: text("Company name"), note: text("What happened", 1000) }),
        handler: ({ company, note }) => {
          const account = lookup(ACCOUNTS, "company", company, "account")
          const entry = { id: store.nextId("int"), company: account.company, note }
          return { logged: store.add("crm-interactions", entry) }
        }
      })
    ]
  })

interface Invoice {
  readonly id: string
  readonly customer: string
  readonly amount: number
  readonly currency: string
  readonly due: string
  readonly status: "paid" | "unpaid" | "overdue"
}

const INVOICES: ReadonlyArray<Invoice> = [
  { id: "INV-1001", customer: "Acme Corp", amount: 4200, currency: "EUR", due: "2025-05-15", status: "paid" },
  {
    id: "INV-1002",
    customer: "Globex",
    amount: 1250.5,
    currency: "EUR",
    due: "2025-05-30",
    status: "overdue"
  },
  { id: "INV-1003", customer: "Initech", amount: 9800, currency: "USD", due: "2025-06-20", status: "unpaid" },
  { id: "INV-1004", customer: "Globex", amount: 310, currency: "EUR", due: "2025-06-25", status: "unpaid" }
]

const invoices = ({ store }: ExampleContext) => {
  const all = () => [...INVOICES, ...store.list<Invoice>("invoices")]
  return definePlugin({
    name: "invoices",
    manifest: {
      title: "Invoices",
      summary: "Look up invoices, list unpaid or overdue ones, and issue new invoices to customers.",
      whenToUse: [
        "The user asks about an invoice by number, or whether a customer has paid.",
        "The user asks which invoices are unpaid, outstanding or overdue.",
        "The user wants to bill a customer or issue a new invoice."
      ],
      whenNotToUse: ["Employee expense claims and receipts: use expenses."],
      examples: [
        { user: "Has invoice INV-1002 been paid?", tool: "get_invoice", args: { id: "INV-1002" } },
        {
          user: "Which invoices for Globex are still unpaid?",
          tool: "list_unpaid_invoices",
          args: { customer: "Globex" }
        },
        {
          user: "Invoice Acme Corp 1500 EUR due 2025-07-01.",
          tool: "create_invoice",
          args: { customer: "Acme Corp", amount: 1500, currency: "EUR", due: "2025-07-01" }
        }
      ],
      tags: ["invoices", "billing", "receivables", "payment"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "get_invoice",
        description: "One invoice by its number: customer, amount, due date, payment status.",
        input: Schema.Struct({ id: text("Invoice number, e.g. INV-1001", 40) }),
        handler: ({ id }) => lookup(all(), "id", id, "invoice")
      }),
      defineTool({
        name: "list_unpaid_invoices",
        description: "Unpaid and overdue invoices, optionally for one customer, with totals per currency.",
        input: Schema.Struct({ customer: Schema.optional(text("Customer name")) }),
        handler: ({ customer }) => {
          const open = all().filter(
            (i) =>
              i.status !== "paid" &&
              (customer === undefined || i.customer.toLowerCase() === customer.toLowerCase())
          )
          const totals: Record<string, number> = {}
          for (const i of open) totals[i.currency] = round((totals[i.currency] ?? 0) + i.amount)
          return { customer: customer ?? "all", invoices: open, totals }
        }
      }),
      defineTool({
        name: "create_invoice",
        description: "Issue a new unpaid invoice to a customer.",
        input: Schema.Struct({
          customer: text("Customer name"),
          amount: between(0.01, 10_000_000, "Amount"),
          currency: Schema.Literal("EUR", "USD", "GBP"),
          due: isoDate("Due date")
        }),
        handler: (input) => {
          const invoice: Invoice = { id: store.nextId("INV", 2001), ...input, status: "unpaid" }
          return { created: store.add("invoices", invoice) }
        }
      })
    ]
  })
}

const EXPENSE_POLICY = [
  { category: "meals", limitPerDay: 60, receiptOver: 25, note: "Alcohol is not reimbursed." },
  { category: "travel", limitPerDay: 400, receiptOver: 0, note: "Economy class for flights under 6 hours." },
  {
    category: "lodging",
    limitPerDay: 180,
    receiptOver: 0,
    note: "Book through the travel desk when possible."
  },
  { category: "equipment", limitPerDay: 300, receiptOver: 0, note: "Over 300 needs manager approval first." }
] as const

const ExpenseCategory = Schema.Literal("meals", "travel", "lodging", "equipment")

const expenses = ({ store }: ExampleContext) =>
  definePlugin({
    name: "expenses",
    manifest: {
      title: "Expense Reports",
      summary: "Submit employee expense claims, check their reimbursement status and the expense policy.",
      whenToUse: [
        "The user wants to file an expense claim or get reimbursed for a receipt.",
        "The user asks about the status of their expense reports.",
        "The user asks what the expense policy allows for meals, travel, lodging or equipment."
      ],
      whenNotToUse: ["Invoices sent to customers: use invoices."],
      examples: [
        {
          user: "File an expense of 42.50 EUR for a client lunch receipt.",
          tool: "submit_expense",
          args: { amount: 42.5, currency: "EUR", category: "meals", description: "Client lunch" }
        },
        { user: "What's the status of my expense reports?", tool: "list_expenses", args: {} },
        {
          user: "How much can I expense for meals per day?",
          tool: "expense_policy",
          args: { category: "meals" }
        }
      ],
      tags: ["expenses", "reimbursement", "receipts", "policy"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "submit_expense",
        description: "File an expense claim; it is checked against the policy's daily limit.",
        input: Schema.Struct({
          amount: between(0.01, 100_000, "Amount"),
          currency: Schema.Literal("EUR", "USD", "GBP"),
          category: ExpenseCategory,
          description: text("What it was for", 300)
        }),
        handler: (input, ctx) => {
          const rule = EXPENSE_POLICY.find((p) => p.category === input.category)!
          const status = input.amount > rule.limitPerDay ? "needs-approval" : "submitted"
          const claim = { id: store.nextId("EXP", 501), ...input, status }
          return { claim: store.add(ExampleStore.forUser("expenses", ctx.user.did), claim), policy: rule }
        }
      }),
      defineTool({
        name: "list_expenses",
        description: "The user's expense claims and their status.",
        input: Schema.Struct({}),
        handler: (_input, ctx) => {
          const claims = store.list(ExampleStore.forUser("expenses", ctx.user.did))
          const seeded = [
            { id: "EXP-401", amount: 89, currency: "EUR", category: "travel", status: "reimbursed" }
          ]
          return { claims: [...seeded, ...claims] }
        }
      }),
      defineTool({
        name: "expense_policy",
        description: "The expense policy for a category: daily limit, receipt rule, notes.",
        input: Schema.Struct({ category: ExpenseCategory }),
        handler: ({ category }) => lookup(EXPENSE_POLICY, "category", category, "category")
      })
    ]
  })

const CONTACTS = [
  { name: "Ana Silva", company: "Acme Corp", email: "ana.silva@acme.example", phone: "+351 21 000 1111" },
  { name: "Ben Okafor", company: "Globex", email: "ben@globex.example", phone: "+44 20 7946 0000" },
  {
    name: "Chloe Martin",
    company: "Initech",
    email: "chloe.martin@initech.example",
    phone: "+33 1 23 45 67 89"
  },
  { name: "Dev Patel", company: "Acme Corp", email: "dev.patel@acme.example", phone: "+91 22 5550 1234" }
] as const

const contacts = () =>
  definePlugin({
    name: "contacts",
    manifest: {
      title: "Contacts",
      summary: "The address book: a person's email address and phone number, or people at a company.",
      whenToUse: [
        "The user asks for someone's email address or phone number.",
        "The user asks who they know at a company, or to look someone up in the address book."
      ],
      whenNotToUse: ["Sales figures or deals of a company: use crm."],
      examples: [
        { user: "What's Chloe Martin's email address?", tool: "get_contact", args: { name: "Chloe Martin" } },
        { user: "Who are my contacts at Acme Corp?", tool: "search_contacts", args: { query: "Acme" } },
        { user: "Find Ben's phone number.", tool: "search_contacts", args: { query: "Ben" } }
      ],
      tags: ["contacts", "address-book", "email", "phone"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "search_contacts",
        description: "Contacts whose name or company contains the query.",
        input: Schema.Struct({ query: text("Part of a name or company") }),
        handler: ({ query }) => ({ query, contacts: search(CONTACTS, query, ["name", "company"]) })
      }),
      defineTool({
        name: "get_contact",
        description: "One contact by full name: email, phone and company.",
        input: Schema.Struct({ name: text("Full name") }),
        handler: ({ name }) => lookup(CONTACTS, "name", name, "contact")
      })
    ]
  })

interface Draft {
  readonly id: string
  readonly to: string
  readonly subject: string
  readonly body: string
}

const GREETING = { formal: "Dear", neutral: "Hello", friendly: "Hi" } as const
const CLOSING = { formal: "Kind regards", neutral: "Best", friendly: "Cheers" } as const
const Tone = Schema.Literal("formal", "neutral", "friendly")

const composeBody = (to: string, points: ReadonlyArray<string>, tone: keyof typeof GREETING) =>
  [`${GREETING[tone]} ${to},`, "", ...points.map((p) => `- ${p}`), "", `${CLOSING[tone]},`].join("\n")

const emailDrafts = ({ store }: ExampleContext) =>
  definePlugin({
    name: "email-drafts",
    manifest: {
      title: "Email Drafts",
      summary: "Drafts emails from bullet points and rewrites a draft in another tone; never sends.",
      whenToUse: [
        "The user asks you to write, compose or draft an email to someone.",
        "The user wants an email draft made more formal, neutral or friendly.",
        "The user asks to see the email drafts written so far."
      ],
      whenNotToUse: ["Looking up someone's email address: use contacts."],
      examples: [
        {
          user: "Draft an email to Ben about moving our sync to Thursday.",
          tool: "draft_email",
          args: { to: "Ben", subject: "Moving our sync", points: ["Can we move our sync to Thursday?"] }
        },
        {
          user: "Make email draft draft-1 more formal.",
          tool: "rewrite_email_tone",
          args: { id: "draft-1", tone: "formal" }
        },
        { user: "Show me my email drafts.", tool: "list_email_drafts", args: {} }
      ],
      tags: ["email", "drafts", "writing", "compose"],
      category: "communication",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "draft_email",
        description: "Write an email draft from a recipient, a subject and bullet points.",
        input: Schema.Struct({
          to: text("Recipient name", 120),
          subject: text("Subject line", 200),
          points: Schema.Array(text("One point to make", 500)).pipe(Schema.minItems(1)),
          tone: Schema.optionalWith(Tone, { default: () => "neutral" as const })
        }),
        handler: ({ to, subject, points, tone }, ctx) => {
          const draft: Draft = { id: store.nextId("draft"), to, subject, body: composeBody(to, points, tone) }
          return { draft: store.add(ExampleStore.forUser("drafts", ctx.user.did), draft) }
        }
      }),
      defineTool({
        name: "rewrite_email_tone",
        description: "Rewrite an existing draft's greeting and closing in another tone.",
        input: Schema.Struct({ id: text("Draft id, e.g. draft-1", 40), tone: Tone }),
        handler: ({ id, tone }, ctx) => {
          const drafts = store.list<Draft>(ExampleStore.forUser("drafts", ctx.user.did))
          const draft = drafts.find((d) => d.id === id)
          if (draft === undefined) {
            const known = drafts.map((d) => d.id).join(", ") || "none yet"
            throw new Error(`No email draft '${id}' (drafts: ${known}). Create one with draft_email first.`)
          }
          const points = draft.body
            .split("\n")
            .filter((l) => l.startsWith("- "))
            .map((l) => l.slice(2))
          return { draft: { ...draft, body: composeBody(draft.to, points, tone) } }
        }
      }),
      defineTool({
        name: "list_email_drafts",
        description: "The email drafts written for this user, oldest first.",
        input: Schema.Struct({}),
        handler: (_input, ctx) => ({
          drafts: store.list<Draft>(ExampleStore.forUser("drafts", ctx.user.did))
        })
      })
    ]
  })

/** Office plugins: calendar, crm, invoices, expenses, contacts, email-drafts. */
export const businessPlugins = (ctx: ExampleContext): ReadonlyArray<Plugin> => [
  calendar(ctx),
  crm(ctx),
  invoices(ctx),
  expenses(ctx),
  contacts(),
  emailDrafts(ctx)
]
