/**
 * People and operations plugins: time off, payroll, tax rates, inventory, parcel tracking and
 * survey results. Fixture tables are small and fixed; writes go to the catalog's store.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import {
  between,
  daysBetween,
  type ExampleContext,
  intBetween,
  isoDate,
  lookup,
  round,
  text
} from "./support.js"

const LEAVE = [
  { employee: "Ana Silva", team: "sales", vacationDays: 18, sickDaysUsed: 2 },
  { employee: "Ben Okafor", team: "sales", vacationDays: 7, sickDaysUsed: 0 },
  { employee: "Chloe Martin", team: "engineering", vacationDays: 22, sickDaysUsed: 5 }
] as const

const ABSENCES = [
  { employee: "Ben Okafor", team: "sales", from: "2025-06-02", to: "2025-06-06", type: "vacation" },
  { employee: "Chloe Martin", team: "engineering", from: "2025-06-04", to: "2025-06-04", type: "sick" }
] as const

const timeOff = ({ store }: ExampleContext) =>
  definePlugin({
    name: "time-off",
    manifest: {
      title: "Time Off",
      summary: "HR leave: vacation balances, time-off requests and who on a team is out of office.",
      whenToUse: [
        "The user asks how many vacation or leave days they or an employee have left.",
        "The user wants to request time off, a holiday from work or sick leave.",
        "The user asks who on their team is out of office or on leave on a date."
      ],
      whenNotToUse: ["Public or bank holidays of a country: use holidays."],
      examples: [
        {
          user: "How many vacation days does Ben Okafor have left?",
          tool: "get_leave_balance",
          args: { employee: "Ben Okafor" }
        },
        {
          user: "Request time off for Ana Silva from 2025-08-04 to 2025-08-08.",
          tool: "request_time_off",
          args: { employee: "Ana Silva", from: "2025-08-04", to: "2025-08-08", type: "vacation" }
        },
        {
          user: "Who on the sales team is out of office on 2025-06-03?",
          tool: "team_absences",
          args: { team: "sales", date: "2025-06-03" }
        }
      ],
      tags: ["hr", "leave", "vacation", "time-off", "pto"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "get_leave_balance",
        description: "Remaining vacation days and sick days used this year for an employee.",
        input: Schema.Struct({ employee: text("Employee full name") }),
        handler: ({ employee }) => lookup(LEAVE, "employee", employee, "employee")
      }),
      defineTool({
        name: "request_time_off",
        description: "File a leave request; it is checked against the remaining balance.",
        input: Schema.Struct({
          employee: text("Employee full name"),
          from: isoDate("First day off"),
          to: isoDate("Last day off"),
          type: Schema.Literal("vacation", "sick", "unpaid")
        }),
        handler: ({ employee, from, to, type }) => {
          const row = lookup(LEAVE, "employee", employee, "employee")
          const days = daysBetween(from, to) + 1
          if (days < 1) throw new Error(`The leave ends (${to}) before it starts (${from}).`)
          const status =
            type === "vacation" && days > row.vacationDays ? "exceeds-balance" : "pending-approval"
          const request = {
            id: store.nextId("LR", 301),
            employee: row.employee,
            from,
            to,
            type,
            days,
            status
          }
          return { request: store.add("leave-requests", request) }
        }
      }),
      defineTool({
        name: "team_absences",
        description: "Who in a team is away on a given day, and why.",
        input: Schema.Struct({ team: text("Team name, e.g. sales"), date: isoDate("Day") }),
        handler: ({ team, date }) => ({
          team,
          date,
          away: ABSENCES.filter((a) => a.team === team.toLowerCase() && a.from <= date && date <= a.to)
        })
      })
    ]
  })

const PAYSLIPS = [
  { employee: "Ana Silva", month: "2025-05", gross: 5200, tax: 1310, social: 570, net: 3320 },
  { employee: "Ben Okafor", month: "2025-05", gross: 4300, tax: 980, social: 473, net: 2847 },
  { employee: "Chloe Martin", month: "2025-05", gross: 6100, tax: 1650, social: 671, net: 3779 }
] as const

const BANDS = [
  { role: "software engineer", level: "mid", min: 58_000, max: 74_000 },
  { role: "account executive", level: "mid", min: 48_000, max: 62_000 },
  { role: "designer", level: "senior", min: 62_000, max: 80_000 }
] as const

const payroll = () =>
  definePlugin({
    name: "payroll",
    manifest: {
      title: "Payroll",
      summary: "Payslips (gross, tax, net pay) by month and the salary band of a role.",
      whenToUse: [
        "The user asks about a payslip, net pay, gross salary or payroll deductions for a month.",
        "The user asks what the salary range or pay band is for a role."
      ],
      whenNotToUse: ["General income tax rates of a country: use tax-rates."],
      examples: [
        {
          user: "Show Ana Silva's payslip for 2025-05.",
          tool: "get_payslip",
          args: { employee: "Ana Silva", month: "2025-05" }
        },
        {
          user: "What's the salary band for a software engineer?",
          tool: "salary_band",
          args: { role: "software engineer" }
        }
      ],
      tags: ["payroll", "payslip", "salary", "net-pay"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "get_payslip",
        description: "One month's payslip of an employee: gross, income tax, social contributions, net.",
        input: Schema.Struct({
          employee: text("Employee full name"),
          month: Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}$/)).annotations({
            description: "Month (YYYY-MM)"
          })
        }),
        handler: ({ employee, month }) => {
          const slip = PAYSLIPS.find(
            (p) => p.employee.toLowerCase() === employee.toLowerCase() && p.month === month
          )
          if (slip === undefined)
            throw new Error(
              `No payslip for '${employee}' in ${month} (this fixture holds 2025-05 for each employee).`
            )
          return slip
        }
      }),
      defineTool({
        name: "salary_band",
        description: "The salary range (annual, EUR) of a role.",
        input: Schema.Struct({ role: text("Job role") }),
        handler: ({ role }) => lookup(BANDS, "role", role, "role")
      })
    ]
  })

const SALES_TAX = [
  { region: "California", rate: 7.25 },
  { region: "New York", rate: 4 },
  { region: "Texas", rate: 6.25 },
  { region: "Oregon", rate: 0 }
] as const

const VAT = [
  { country: "Germany", standard: 19, reduced: 7 },
  { country: "France", standard: 20, reduced: 5.5 },
  { country: "United Kingdom", standard: 20, reduced: 5 },
  { country: "Portugal", standard: 23, reduced: 6 }
] as const

const taxRates = () =>
  definePlugin({
    name: "tax-rates",
    manifest: {
      title: "Tax Rates",
      summary: "VAT rates by country and US state sales tax, and the tax on a net amount.",
      whenToUse: [
        "The user asks for the VAT rate of a country, standard or reduced.",
        "The user asks for the sales tax rate of a US state.",
        "The user wants the tax added to a net price."
      ],
      whenNotToUse: ["An employee's payslip deductions: use payroll."],
      examples: [
        { user: "What's the VAT rate in France?", tool: "vat_rate", args: { country: "France" } },
        { user: "Sales tax rate in Texas?", tool: "sales_tax_rate", args: { state: "Texas" } },
        {
          user: "Add German VAT to a net price of 250.",
          tool: "add_vat",
          args: { country: "Germany", net: 250, rate: "standard" }
        }
      ],
      tags: ["tax", "vat", "sales-tax", "rates"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "vat_rate",
        description: "Standard and reduced VAT rates (percent) of a country.",
        input: Schema.Struct({ country: text("Country name") }),
        handler: ({ country }) => lookup(VAT, "country", country, "country")
      }),
      defineTool({
        name: "sales_tax_rate",
        description: "State-level sales tax rate (percent) of a US state; local taxes not included.",
        input: Schema.Struct({ state: text("US state name") }),
        handler: ({ state }) => lookup(SALES_TAX, "region", state, "state")
      }),
      defineTool({
        name: "add_vat",
        description: "VAT and gross amount for a net amount in a country.",
        input: Schema.Struct({
          country: text("Country name"),
          net: between(0, 1e9, "Net amount"),
          rate: Schema.optionalWith(Schema.Literal("standard", "reduced"), {
            default: () => "standard" as const
          })
        }),
        handler: ({ country, net, rate }) => {
          const row = lookup(VAT, "country", country, "country")
          const percent = row[rate]
          const vat = round((net * percent) / 100)
          return { country: row.country, rate, percent, net, vat, gross: round(net + vat) }
        }
      })
    ]
  })

interface StockItem {
  readonly sku: string
  readonly product: string
  readonly warehouse: string
  quantity: number
  readonly reorderAt: number
}

const STOCK: ReadonlyArray<StockItem> = [
  { sku: "SKU-100", product: "Ergonomic chair", warehouse: "Lisbon", quantity: 34, reorderAt: 10 },
  { sku: "SKU-101", product: "Standing desk", warehouse: "Lisbon", quantity: 6, reorderAt: 8 },
  { sku: "SKU-102", product: "Monitor arm", warehouse: "Rotterdam", quantity: 120, reorderAt: 40 },
  { sku: "SKU-103", product: "Desk lamp", warehouse: "Rotterdam", quantity: 3, reorderAt: 15 }
]

const inventory = ({ store }: ExampleContext) => {
  // Stock levels change: each catalog copies the fixture into its store on first use.
  const items = () => {
    const list = store.list<StockItem>("inventory")
    if (list.length === 0) list.push(...STOCK.map((s) => ({ ...s })))
    return list
  }
  return definePlugin({
    name: "inventory",
    manifest: {
      title: "Inventory",
      summary: "Warehouse stock levels by SKU or product, low-stock items to reorder, stock adjustments.",
      whenToUse: [
        "The user asks how many units of a product or SKU are in stock, and in which warehouse.",
        "The user asks which items are low on stock or need reordering.",
        "The user wants to record received or shipped units (a stock adjustment)."
      ],
      examples: [
        {
          user: "How many standing desks do we have in stock?",
          tool: "check_stock",
          args: { product: "Standing desk" }
        },
        { user: "Which warehouse items need reordering?", tool: "low_stock", args: {} },
        {
          user: "We received 50 desk lamps, update the stock for SKU-103.",
          tool: "adjust_stock",
          args: { sku: "SKU-103", delta: 50, reason: "received" }
        }
      ],
      tags: ["inventory", "stock", "warehouse", "sku", "reorder"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "check_stock",
        description: "Units in stock of a product (by name or SKU) and its warehouse.",
        input: Schema.Struct({ product: text("Product name or SKU") }),
        handler: ({ product }) =>
          product.toUpperCase().startsWith("SKU-")
            ? lookup(items(), "sku", product, "SKU")
            : lookup(items(), "product", product, "product")
      }),
      defineTool({
        name: "low_stock",
        description:
          "Items at or below their reorder point, with how many to order back to twice that point.",
        input: Schema.Struct({}),
        handler: () => ({
          items: items()
            .filter((i) => i.quantity <= i.reorderAt)
            .map((i) => ({ ...i, suggestedOrder: i.reorderAt * 2 - i.quantity }))
        })
      }),
      defineTool({
        name: "adjust_stock",
        description: "Add (received) or remove (shipped, damaged) units of a SKU.",
        input: Schema.Struct({
          sku: text("SKU, e.g. SKU-100", 20),
          delta: intBetween(-100_000, 100_000, "Units to add (positive) or remove (negative)"),
          reason: Schema.Literal("received", "shipped", "damaged", "count-correction")
        }),
        handler: ({ sku, delta, reason }) => {
          const item = lookup(items(), "sku", sku, "SKU")
          if (item.quantity + delta < 0)
            throw new Error(`Cannot remove ${-delta} units of ${item.sku}: only ${item.quantity} in stock.`)
          item.quantity += delta
          return { sku: item.sku, product: item.product, quantity: item.quantity, change: delta, reason }
        }
      })
    ]
  })
}

const PARCELS = [
  {
    trackingNumber: "1Z999AA10123456784",
    carrier: "UPS",
    status: "in transit",
    eta: "2025-06-04",
    events: ["2025-06-01 Picked up, Porto", "2025-06-02 Departed hub, Madrid"]
  },
  {
    trackingNumber: "JD014600003828368912",
    carrier: "DHL",
    status: "delivered",
    eta: "2025-05-28",
    events: ["2025-05-26 Shipped, Leipzig", "2025-05-28 Delivered, front door"]
  }
] as const

const RATES_PER_KG = { domestic: 1.2, europe: 3.5, international: 9 } as const

const shippingTracking = () =>
  definePlugin({
    name: "shipping-tracking",
    manifest: {
      title: "Parcel Tracking",
      summary:
        "Tracks parcels and packages by tracking number and quotes courier shipping costs by weight and zone.",
      whenToUse: [
        "The user asks where their parcel, package or delivery is, with a tracking number.",
        "The user asks how much it costs to ship or post a parcel."
      ],
      whenNotToUse: ["Flight status of a passenger flight: use flights."],
      examples: [
        {
          user: "Where is my package 1Z999AA10123456784?",
          tool: "track_parcel",
          args: { trackingNumber: "1Z999AA10123456784" }
        },
        {
          user: "How much to ship a 3 kg parcel to another European country?",
          tool: "shipping_quote",
          args: { weightKg: 3, zone: "europe" }
        }
      ],
      tags: ["parcel", "package", "tracking", "shipping", "courier", "delivery"],
      category: "integration",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "track_parcel",
        description: "Carrier, status, estimated delivery date and scan history of a parcel.",
        input: Schema.Struct({ trackingNumber: text("Tracking number", 40) }),
        handler: ({ trackingNumber }) => lookup(PARCELS, "trackingNumber", trackingNumber, "tracking number")
      }),
      defineTool({
        name: "shipping_quote",
        description: "Shipping cost (EUR) for a parcel by weight and destination zone.",
        input: Schema.Struct({
          weightKg: between(0.1, 70, "Parcel weight in kg"),
          zone: Schema.Literal("domestic", "europe", "international")
        }),
        handler: ({ weightKg, zone }) => ({
          weightKg,
          zone,
          priceEur: round(4 + weightKg * RATES_PER_KG[zone]),
          days: zone === "domestic" ? 2 : zone === "europe" ? 4 : 9
        })
      })
    ]
  })

const SURVEYS = [
  {
    survey: "Customer NPS Q2",
    responses: 412,
    nps: 38,
    questions: [
      { question: "How likely are you to recommend us?", average: 7.9 },
      { question: "How easy was onboarding?", average: 6.4 }
    ]
  },
  {
    survey: "Employee engagement 2025",
    responses: 86,
    nps: 21,
    questions: [
      { question: "I understand our goals", average: 4.1 },
      { question: "I have the tools I need", average: 3.2 }
    ]
  }
] as const

const surveyResults = () =>
  definePlugin({
    name: "survey-results",
    manifest: {
      title: "Survey Results",
      summary: "Results of customer and employee surveys: response counts, NPS and per-question scores.",
      whenToUse: [
        "The user asks for the results, response count or NPS score of a survey.",
        "The user asks which survey question scored lowest or highest.",
        "The user asks which surveys have results available."
      ],
      examples: [
        {
          user: "What NPS did the Customer NPS Q2 survey get?",
          tool: "survey_summary",
          args: { survey: "Customer NPS Q2" }
        },
        { user: "Which surveys have results?", tool: "list_surveys", args: {} },
        {
          user: "Which question scored lowest in the employee engagement survey?",
          tool: "survey_summary",
          args: { survey: "Employee engagement 2025" }
        }
      ],
      tags: ["survey", "nps", "feedback", "responses"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "list_surveys",
        description: "The surveys with results, and how many responses each has.",
        input: Schema.Struct({}),
        handler: () => ({ surveys: SURVEYS.map((s) => ({ survey: s.survey, responses: s.responses })) })
      }),
      defineTool({
        name: "survey_summary",
        description: "A survey's responses, NPS and questions sorted from lowest to highest score.",
        input: Schema.Struct({ survey: text("Survey name") }),
        handler: ({ survey }) => {
          const s = lookup(SURVEYS, "survey", survey, "survey")
          return { ...s, questions: [...s.questions].sort((a, b) => a.average - b.average) }
        }
      })
    ]
  })

/** People and operations plugins. */
export const operationsPlugins = (ctx: ExampleContext): ReadonlyArray<Plugin> => [
  timeOff(ctx),
  payroll(),
  taxRates(),
  inventory(ctx),
  shippingTracking(),
  surveyResults()
]
