/**
 * Knowledge and collaboration plugins: the internal knowledge base, product docs, a translation
 * glossary, meeting notes, project tasks, customer support tickets, job postings and a news
 * digest. Fixed tables; writes go to the catalog's store.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import { type ExampleContext, isoDate, lookup, search, text } from "./support.js"

const ARTICLES = [
  {
    id: "KB-1",
    title: "Connecting to the office VPN",
    body: "Install the VPN client, sign in with SSO, pick the nearest gateway."
  },
  { id: "KB-2", title: "Parental leave policy", body: "Employees get 20 weeks of paid parental leave." },
  {
    id: "KB-3",
    title: "Booking a meeting room",
    body: "Rooms are booked in the facilities portal up to 4 weeks ahead."
  },
  {
    id: "KB-4",
    title: "Resetting your laptop",
    body: "Back up to the company drive, then open IT self-service."
  }
] as const

const knowledgeBase = () =>
  definePlugin({
    name: "knowledge-base",
    manifest: {
      title: "Company Knowledge Base",
      summary: "Internal company wiki: IT how-tos, HR policies and office procedures for employees.",
      whenToUse: [
        "The user asks how to do something at the company (VPN, laptop, meeting rooms, IT help).",
        "The user asks about an internal company policy, e.g. parental leave."
      ],
      whenNotToUse: [
        "Developer or API documentation of our product: use docs-search.",
        "A person's own leave balance: use time-off."
      ],
      examples: [
        { user: "How do I connect to the office VPN?", tool: "search_articles", args: { query: "VPN" } },
        {
          user: "What's the company parental leave policy?",
          tool: "search_articles",
          args: { query: "parental leave" }
        },
        { user: "Open wiki article KB-3.", tool: "get_article", args: { id: "KB-3" } }
      ],
      tags: ["wiki", "intranet", "it-help", "company-policy", "how-to"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "search_articles",
        description: "Knowledge-base articles whose title or body contains the words.",
        input: Schema.Struct({ query: text("Words to look for") }),
        handler: ({ query }) => ({ query, articles: search(ARTICLES, query, ["title", "body"]) })
      }),
      defineTool({
        name: "get_article",
        description: "One knowledge-base article in full.",
        input: Schema.Struct({ id: text("Article id, e.g. KB-1", 20) }),
        handler: ({ id }) => lookup(ARTICLES, "id", id, "article")
      })
    ]
  })

const DOCS = [
  {
    slug: "quickstart",
    title: "Quickstart",
    body: "Install the SDK, create an API key, send your first request."
  },
  {
    slug: "authentication",
    title: "Authentication",
    body: "Pass the API key in the Authorization header as a Bearer token."
  },
  {
    slug: "rate-limits",
    title: "Rate limits",
    body: "60 requests per minute per key; 429 responses carry Retry-After."
  },
  { slug: "webhooks", title: "Webhooks", body: "Register an endpoint; payloads are signed with HMAC-SHA256." }
] as const

const docsSearch = () =>
  definePlugin({
    name: "docs-search",
    manifest: {
      title: "Developer Docs",
      summary:
        "Our public developer documentation: SDK quickstart, API authentication, rate limits, webhooks.",
      whenToUse: [
        "The user asks how to call our API, authenticate, or use the SDK.",
        "The user asks about API rate limits, error codes or webhooks in our developer documentation."
      ],
      whenNotToUse: [
        "Internal company procedures: use knowledge-base.",
        "Where something is implemented in our source code: use code-search."
      ],
      examples: [
        { user: "How do I authenticate API requests?", tool: "search_docs", args: { query: "API key" } },
        { user: "What are the API rate limits?", tool: "get_doc_page", args: { slug: "rate-limits" } },
        {
          user: "Show the developer docs page about webhooks.",
          tool: "get_doc_page",
          args: { slug: "webhooks" }
        }
      ],
      tags: ["documentation", "api", "sdk", "developer"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "search_docs",
        description: "Documentation pages containing the words.",
        input: Schema.Struct({ query: text("Words to look for") }),
        handler: ({ query }) => ({ query, pages: search(DOCS, query, ["title", "body"]) })
      }),
      defineTool({
        name: "get_doc_page",
        description: "One documentation page by slug.",
        input: Schema.Struct({ slug: text("Page slug, e.g. quickstart", 100) }),
        handler: ({ slug }) => lookup(DOCS, "slug", slug, "page")
      })
    ]
  })

const GLOSSARY = [
  { term: "invoice", de: "Rechnung", fr: "facture", es: "factura", pt: "fatura" },
  { term: "dashboard", de: "Dashboard", fr: "tableau de bord", es: "panel", pt: "painel" },
  { term: "checkout", de: "Kasse", fr: "paiement", es: "pago", pt: "finalizar compra" },
  { term: "sign in", de: "Anmelden", fr: "se connecter", es: "iniciar sesión", pt: "entrar" }
] as const

const Language = Schema.Literal("de", "fr", "es", "pt")

const glossary = () =>
  definePlugin({
    name: "translation-glossary",
    manifest: {
      title: "Translation Glossary",
      summary: "Approved product terminology in German, French, Spanish and Portuguese for localization.",
      whenToUse: [
        "The user asks how a product term is translated into German, French, Spanish or Portuguese.",
        "A translator or localization task needs the approved terminology list for a language."
      ],
      examples: [
        {
          user: "How do we translate 'checkout' into French?",
          tool: "translate_term",
          args: { term: "checkout", language: "fr" }
        },
        {
          user: "Give me the German terminology list for localization.",
          tool: "glossary_terms",
          args: { language: "de" }
        }
      ],
      tags: ["translation", "glossary", "localization", "terminology"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "translate_term",
        description: "The approved translation of a product term.",
        input: Schema.Struct({ term: text("English term", 100), language: Language }),
        handler: ({ term, language }) => {
          const row = lookup(GLOSSARY, "term", term, "term")
          return { term: row.term, language, translation: row[language] }
        }
      }),
      defineTool({
        name: "glossary_terms",
        description: "Every approved term of a language.",
        input: Schema.Struct({ language: Language }),
        handler: ({ language }) => ({
          language,
          terms: GLOSSARY.map((g) => ({ term: g.term, translation: g[language] }))
        })
      })
    ]
  })

const MEETINGS = [
  {
    meeting: "Quarterly review",
    date: "2025-06-02",
    decisions: ["Focus Q3 on onboarding", "Freeze pricing until September"],
    actions: [
      { owner: "Ana", item: "Draft onboarding plan", due: "2025-06-13" },
      { owner: "Ben", item: "Send pricing memo to sales", due: "2025-06-06" }
    ]
  },
  {
    meeting: "Design sync",
    date: "2025-06-03",
    decisions: ["Adopt the new colour tokens"],
    actions: [{ owner: "Eli", item: "Update component library", due: "2025-06-20" }]
  }
] as const

const meetingNotes = () =>
  definePlugin({
    name: "meeting-notes",
    manifest: {
      title: "Meeting Notes",
      summary: "Minutes of past meetings: decisions taken and action items with owners.",
      whenToUse: [
        "The user asks what was decided or discussed in a past meeting (the minutes).",
        "The user asks for the action items from meetings, or those assigned to someone."
      ],
      whenNotToUse: ["Scheduling a future meeting: use calendar."],
      examples: [
        {
          user: "What did we decide in the quarterly review?",
          tool: "get_minutes",
          args: { meeting: "Quarterly review" }
        },
        {
          user: "What action items does Ana have from meetings?",
          tool: "action_items",
          args: { owner: "Ana" }
        }
      ],
      tags: ["meeting-notes", "minutes", "decisions", "action-items"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "get_minutes",
        description: "Decisions and action items of one meeting.",
        input: Schema.Struct({ meeting: text("Meeting name") }),
        handler: ({ meeting }) => lookup(MEETINGS, "meeting", meeting, "meeting")
      }),
      defineTool({
        name: "action_items",
        description: "Open action items from all meetings, optionally for one owner.",
        input: Schema.Struct({ owner: Schema.optional(text("Owner's first name", 80)) }),
        handler: ({ owner }) => ({
          items: MEETINGS.flatMap((m) => m.actions.map((a) => ({ meeting: m.meeting, ...a }))).filter(
            (a) => owner === undefined || a.owner.toLowerCase() === owner.toLowerCase()
          )
        })
      })
    ]
  })

interface Task {
  readonly id: string
  readonly project: string
  readonly title: string
  readonly assignee: string
  readonly due: string
  done: boolean
}

const TASKS: ReadonlyArray<Task> = [
  {
    id: "T-1",
    project: "Office move",
    title: "Book movers",
    assignee: "Ben",
    due: "2025-06-10",
    done: false
  },
  {
    id: "T-2",
    project: "Office move",
    title: "Order new desks",
    assignee: "Ana",
    due: "2025-06-05",
    done: true
  },
  {
    id: "T-3",
    project: "Website relaunch",
    title: "Write launch copy",
    assignee: "Chloe",
    due: "2025-06-18",
    done: false
  }
]

const projectTasks = ({ store }: ExampleContext) => {
  const tasks = () => {
    const list = store.list<Task>("tasks")
    if (list.length === 0) list.push(...TASKS.map((t) => ({ ...t })))
    return list
  }
  return definePlugin({
    name: "project-tasks",
    manifest: {
      title: "Project Tasks",
      summary: "To-do lists of team projects: tasks with assignees and due dates, add and complete them.",
      whenToUse: [
        "The user asks what tasks or to-dos are left in a project, or who is assigned.",
        "The user wants to add a task with an assignee and a due date to a project.",
        "The user wants to mark a project task as done."
      ],
      whenNotToUse: ["Software bugs: use issue-tracker.", "Personal things to remember: use notes."],
      examples: [
        {
          user: "What tasks are left in the Office move project?",
          tool: "list_tasks",
          args: { project: "Office move" }
        },
        {
          user: "Add a task to Website relaunch: proofread the landing page, for Dev, due 2025-06-16.",
          tool: "add_task",
          args: {
            project: "Website relaunch",
            title: "Proofread the landing page",
            assignee: "Dev",
            due: "2025-06-16"
          }
        },
        { user: "Mark task T-1 as done.", tool: "complete_task", args: { id: "T-1" } }
      ],
      tags: ["tasks", "todo", "project", "assignee"],
      category: "automation",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "list_tasks",
        description: "Tasks of a project, open ones first.",
        input: Schema.Struct({ project: text("Project name") }),
        handler: ({ project }) => {
          const found = tasks().filter((t) => t.project.toLowerCase() === project.toLowerCase())
          if (found.length === 0)
            throw new Error(
              `No project '${project}'. Projects: ${[...new Set(tasks().map((t) => t.project))].join(", ")}.`
            )
          return { project, tasks: [...found].sort((a, b) => Number(a.done) - Number(b.done)) }
        }
      }),
      defineTool({
        name: "add_task",
        description: "Add an open task to a project.",
        input: Schema.Struct({
          project: text("Project name"),
          title: text("What needs doing", 200),
          assignee: text("Who does it", 80),
          due: isoDate("Due date")
        }),
        handler: (input) => {
          const task: Task = { id: store.nextId("T", 100), ...input, done: false }
          tasks().push(task)
          return { created: task }
        }
      }),
      defineTool({
        name: "complete_task",
        description: "Mark a task as done.",
        input: Schema.Struct({ id: text("Task id, e.g. T-1", 20) }),
        handler: ({ id }) => {
          const task = lookup(tasks(), "id", id, "task")
          task.done = true
          return { completed: task }
        }
      })
    ]
  })
}

interface Ticket {
  readonly id: string
  readonly customer: string
  readonly subject: string
  readonly priority: "low" | "normal" | "urgent"
  readonly status: "open" | "pending" | "solved"
  readonly replies: Array<string>
}

const TICKETS: ReadonlyArray<Ticket> = [
  {
    id: "SUP-501",
    customer: "Globex",
    subject: "Cannot download invoice PDF",
    priority: "normal",
    status: "open",
    replies: []
  },
  {
    id: "SUP-502",
    customer: "Acme Corp",
    subject: "Account locked after password reset",
    priority: "urgent",
    status: "open",
    replies: []
  },
  {
    id: "SUP-503",
    customer: "Initech",
    subject: "Question about plan upgrade",
    priority: "low",
    status: "solved",
    replies: ["Done."]
  }
]

const supportTickets = ({ store }: ExampleContext) => {
  const tickets = () => {
    const list = store.list<Ticket>("tickets")
    if (list.length === 0) list.push(...TICKETS.map((t) => ({ ...t, replies: [...t.replies] })))
    return list
  }
  return definePlugin({
    name: "support-tickets",
    manifest: {
      title: "Support Tickets",
      summary: "Customer helpdesk: open support tickets from customers, their priority, and replies.",
      whenToUse: [
        "The user asks about a customer support ticket or helpdesk request.",
        "The user asks which support tickets are open or urgent.",
        "The user wants to reply to a customer on a support ticket."
      ],
      whenNotToUse: ["Bugs for the engineering team: use issue-tracker."],
      examples: [
        {
          user: "Which urgent support tickets are open?",
          tool: "open_tickets",
          args: { priority: "urgent" }
        },
        { user: "Show helpdesk ticket SUP-501.", tool: "get_ticket", args: { id: "SUP-501" } },
        {
          user: "Reply to ticket SUP-502 that we unlocked the customer's account.",
          tool: "reply_to_ticket",
          args: { id: "SUP-502", message: "We have unlocked your account." }
        }
      ],
      tags: ["support", "helpdesk", "tickets", "customers"],
      category: "communication",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "open_tickets",
        description: "Unsolved tickets, optionally of one priority.",
        input: Schema.Struct({ priority: Schema.optional(Schema.Literal("low", "normal", "urgent")) }),
        handler: ({ priority }) => ({
          tickets: tickets().filter(
            (t) => t.status !== "solved" && (priority === undefined || t.priority === priority)
          )
        })
      }),
      defineTool({
        name: "get_ticket",
        description: "One ticket with its replies.",
        input: Schema.Struct({ id: text("Ticket id, e.g. SUP-501", 20) }),
        handler: ({ id }) => lookup(tickets(), "id", id, "ticket")
      }),
      defineTool({
        name: "reply_to_ticket",
        description: "Add a reply to a ticket; the ticket becomes pending on the customer.",
        input: Schema.Struct({ id: text("Ticket id", 20), message: text("Reply to the customer", 2000) }),
        handler: ({ id, message }) => {
          const ticket = lookup(tickets(), "id", id, "ticket")
          ticket.replies.push(message)
          const updated = { ...ticket, status: "pending" as const }
          tickets()[tickets().indexOf(ticket)] = updated
          return { ticket: updated }
        }
      })
    ]
  })
}

const JOBS = [
  { id: "J-21", title: "Senior Backend Engineer", location: "Lisbon", remote: true, salary: "70-85k EUR" },
  { id: "J-22", title: "Product Designer", location: "Berlin", remote: false, salary: "60-72k EUR" },
  { id: "J-23", title: "Customer Success Manager", location: "London", remote: true, salary: "50-60k GBP" }
] as const

const jobPostings = () =>
  definePlugin({
    name: "job-postings",
    manifest: {
      title: "Job Postings",
      summary: "Open job vacancies at the company: search roles by title or city, read a posting.",
      whenToUse: [
        "The user asks which jobs or positions are open, or is looking for a job here.",
        "The user asks about a specific job posting, its location, remote option or salary."
      ],
      whenNotToUse: ["Salary bands of current employees: use payroll."],
      examples: [
        {
          user: "Are there any engineering jobs open in Lisbon?",
          tool: "search_jobs",
          args: { query: "engineer" }
        },
        { user: "Tell me about job posting J-22.", tool: "get_job", args: { id: "J-22" } }
      ],
      tags: ["jobs", "hiring", "careers", "vacancies"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "search_jobs",
        description: "Open positions whose title or location contains the words.",
        input: Schema.Struct({ query: text("Role or city") }),
        handler: ({ query }) => ({ query, jobs: search(JOBS, query, ["title", "location"]) })
      }),
      defineTool({
        name: "get_job",
        description: "One job posting.",
        input: Schema.Struct({ id: text("Posting id, e.g. J-21", 20) }),
        handler: ({ id }) => lookup(JOBS, "id", id, "job posting")
      })
    ]
  })

const NEWS = [
  { topic: "technology", headline: "Open-source model tops coding benchmark", source: "fixture" },
  { topic: "technology", headline: "EU agrees common charger rules for laptops", source: "fixture" },
  { topic: "business", headline: "Central bank holds interest rates steady", source: "fixture" },
  { topic: "science", headline: "Probe returns asteroid samples to Earth", source: "fixture" },
  { topic: "sports", headline: "Underdogs win the cup final on penalties", source: "fixture" }
] as const

const Topic = Schema.Literal("technology", "business", "science", "sports")

const newsDigest = () =>
  definePlugin({
    name: "news-digest",
    manifest: {
      title: "News Digest",
      summary: "Today's news headlines by topic and a short daily news digest (offline fixture).",
      whenToUse: [
        "The user asks for the latest news or headlines about technology, business, science or sports.",
        "The user asks for a daily news briefing or digest."
      ],
      examples: [
        { user: "What's in the technology news today?", tool: "headlines", args: { topic: "technology" } },
        {
          user: "Give me my daily news digest.",
          tool: "daily_digest",
          args: { topics: ["business", "science"] }
        }
      ],
      tags: ["news", "headlines", "digest", "briefing"],
      category: "data",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "headlines",
        description: "Headlines of one topic.",
        input: Schema.Struct({ topic: Topic }),
        handler: ({ topic }) => ({
          topic,
          headlines: NEWS.filter((n) => n.topic === topic).map((n) => n.headline)
        })
      }),
      defineTool({
        name: "daily_digest",
        description: "The first headline of each chosen topic.",
        input: Schema.Struct({ topics: Schema.Array(Topic).pipe(Schema.minItems(1)) }),
        handler: ({ topics }) => ({
          digest: topics.map((t) => ({
            topic: t,
            headline: NEWS.find((n) => n.topic === t)?.headline ?? "No news."
          }))
        })
      })
    ]
  })

/** Knowledge and collaboration plugins. */
export const knowledgePlugins = (ctx: ExampleContext): ReadonlyArray<Plugin> => [
  knowledgeBase(),
  docsSearch(),
  glossary(),
  meetingNotes(),
  projectTasks(ctx),
  supportTickets(ctx),
  jobPostings(),
  newsDigest()
]
