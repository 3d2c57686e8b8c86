/**
 * Home and leisure plugins: car maintenance, household energy usage, the public library,
 * local events and museums, and cinema showtimes. Fixed tables; writes go to the store.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import {
  type ExampleContext,
  ExampleStore,
  intBetween,
  isoDate,
  lookup,
  round,
  search,
  text
} from "./support.js"

const SERVICE_INTERVALS = [
  { item: "oil change", everyKm: 15_000 },
  { item: "tyre rotation", everyKm: 10_000 },
  { item: "brake fluid", everyKm: 40_000 },
  { item: "timing belt", everyKm: 120_000 }
] as const

interface ServiceRecord {
  readonly id: string
  readonly date: string
  readonly item: string
  readonly odometerKm: number
}

const carMaintenance = ({ store }: ExampleContext) =>
  definePlugin({
    name: "car-maintenance",
    manifest: {
      title: "Car Maintenance",
      summary: "Car service schedule by mileage (oil change, tyres, brakes) and the car's service history.",
      whenToUse: [
        "The user asks when their car is due for an oil change, tyre rotation or other service.",
        "The user wants to record a car service or garage visit, or see the service history."
      ],
      examples: [
        {
          user: "My car has 61000 km, what service is due?",
          tool: "service_due",
          args: { odometerKm: 61000 }
        },
        {
          user: "Log an oil change for my car at 60500 km on 2025-05-20.",
          tool: "log_service",
          args: { date: "2025-05-20", item: "oil change", odometerKm: 60500 }
        },
        { user: "Show my car's service history.", tool: "service_history", args: {} }
      ],
      tags: ["car", "vehicle", "maintenance", "service", "mileage"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "service_due",
        description: "Each service item with km left until due, given the odometer and the logged services.",
        input: Schema.Struct({ odometerKm: intBetween(0, 2_000_000, "Current odometer reading, km") }),
        handler: ({ odometerKm }, ctx) => {
          const history = store.list<ServiceRecord>(ExampleStore.forUser("car", ctx.user.did))
          return {
            odometerKm,
            items: SERVICE_INTERVALS.map((s) => {
              const last = history.filter((h) => h.item === s.item).at(-1)?.odometerKm ?? 0
              const dueAtKm = last + s.everyKm * Math.max(1, Math.ceil((odometerKm - last) / s.everyKm))
              return { item: s.item, dueAtKm, kmLeft: dueAtKm - odometerKm }
            })
          }
        }
      }),
      defineTool({
        name: "log_service",
        description: "Record a service done on the car.",
        input: Schema.Struct({
          date: isoDate("Service date"),
          item: Schema.Literal("oil change", "tyre rotation", "brake fluid", "timing belt"),
          odometerKm: intBetween(0, 2_000_000, "Odometer at the service, km")
        }),
        handler: (input, ctx) => ({
          logged: store.add<ServiceRecord>(ExampleStore.forUser("car", ctx.user.did), {
            id: store.nextId("svc"),
            ...input
          })
        })
      }),
      defineTool({
        name: "service_history",
        description: "The car's logged services, oldest first.",
        input: Schema.Struct({}),
        handler: (_input, ctx) => ({
          services: store.list<ServiceRecord>(ExampleStore.forUser("car", ctx.user.did))
        })
      })
    ]
  })

const METER = [
  { month: "2025-03", kwh: 312, costEur: 71.8 },
  { month: "2025-04", kwh: 268, costEur: 61.6 },
  { month: "2025-05", kwh: 241, costEur: 55.4 }
] as const

const APPLIANCES = [
  { appliance: "fridge", watts: 150, hoursPerDay: 24 },
  { appliance: "washing machine", watts: 2000, hoursPerDay: 0.5 },
  { appliance: "heat pump", watts: 1500, hoursPerDay: 4 },
  { appliance: "tv", watts: 100, hoursPerDay: 3 }
] as const

const PRICE_PER_KWH = 0.23

const energyUsage = () =>
  definePlugin({
    name: "energy-usage",
    manifest: {
      title: "Home Energy Usage",
      summary: "Household electricity use from the smart meter (kWh and cost per month) and appliance costs.",
      whenToUse: [
        "The user asks how much electricity (kWh) the home used, or what the power bill was, in a month.",
        "The user asks what an appliance costs to run per month."
      ],
      examples: [
        {
          user: "How much electricity did we use in 2025-05?",
          tool: "monthly_energy",
          args: { month: "2025-05" }
        },
        {
          user: "What does the heat pump cost to run per month?",
          tool: "appliance_cost",
          args: { appliance: "heat pump" }
        }
      ],
      tags: ["energy", "electricity", "kwh", "smart-meter", "power-bill"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "monthly_energy",
        description: "Electricity used and its cost in a month, with the change from the month before.",
        input: Schema.Struct({
          month: Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}$/)).annotations({
            description: "Month (YYYY-MM)"
          })
        }),
        handler: ({ month }) => {
          const i = METER.findIndex((m) => m.month === month)
          if (i < 0)
            throw new Error(
              `No meter reading for ${month} (fixture: ${METER.map((m) => m.month).join(", ")}).`
            )
          const prev = METER[i - 1]
          return { ...METER[i]!, changeKwh: prev === undefined ? null : METER[i]!.kwh - prev.kwh }
        }
      }),
      defineTool({
        name: "appliance_cost",
        description: "Monthly kWh and cost of running an appliance at its typical daily use.",
        input: Schema.Struct({ appliance: text("Appliance", 60) }),
        handler: ({ appliance }) => {
          const a = lookup(APPLIANCES, "appliance", appliance, "appliance")
          const kwh = round((a.watts * a.hoursPerDay * 30) / 1000, 1)
          return {
            ...a,
            kwhPerMonth: kwh,
            costEurPerMonth: round(kwh * PRICE_PER_KWH),
            pricePerKwh: PRICE_PER_KWH
          }
        }
      })
    ]
  })

const BOOKS = [
  { isbn: "9780141439518", title: "Pride and Prejudice", author: "Jane Austen", copies: 3, onLoan: 3 },
  { isbn: "9780553283686", title: "Hyperion", author: "Dan Simmons", copies: 1, onLoan: 0 },
  {
    isbn: "9780262033848",
    title: "Introduction to Algorithms",
    author: "Cormen et al.",
    copies: 2,
    onLoan: 1
  }
] as const

const libraryCatalog = ({ store }: ExampleContext) =>
  definePlugin({
    name: "library-catalog",
    manifest: {
      title: "Library Catalog",
      summary: "The public library's books: search by title or author, check availability, place a hold.",
      whenToUse: [
        "The user asks whether the library has a book, or searches books by title or author.",
        "The user wants to borrow or reserve (place a hold on) a library book."
      ],
      examples: [
        {
          user: "Does the library have books by Jane Austen?",
          tool: "search_books",
          args: { query: "Austen" }
        },
        {
          user: "Place a hold on the library book Pride and Prejudice.",
          tool: "place_hold",
          args: { isbn: "9780141439518" }
        }
      ],
      tags: ["library", "books", "borrow", "isbn"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "search_books",
        description: "Books whose title or author contains the words, with copies available.",
        input: Schema.Struct({ query: text("Title or author words") }),
        handler: ({ query }) => ({
          query,
          books: search(BOOKS, query, ["title", "author"]).map((b) => ({
            ...b,
            available: b.copies - b.onLoan
          }))
        })
      }),
      defineTool({
        name: "place_hold",
        description: "Reserve a book; the user's place in the queue when no copy is free.",
        input: Schema.Struct({
          isbn: Schema.String.pipe(Schema.pattern(/^\d{13}$/)).annotations({ description: "ISBN-13" })
        }),
        handler: ({ isbn }, ctx) => {
          const book = lookup(BOOKS, "isbn", isbn, "ISBN")
          const holds = store.list<{ isbn: string; did: string }>("library-holds")
          holds.push({ isbn, did: ctx.user.did })
          const available = book.copies - book.onLoan
          const position = holds.filter((h) => h.isbn === isbn).length
          return available > 0
            ? { title: book.title, status: "ready for pickup" }
            : { title: book.title, status: "queued", queuePosition: position }
        }
      })
    ]
  })

const EVENTS = [
  { id: "E-1", city: "Lisbon", date: "2025-06-13", kind: "festival", title: "Santo António street festival" },
  { id: "E-2", city: "Lisbon", date: "2025-06-14", kind: "concert", title: "Fado night at the castle" },
  {
    id: "E-3",
    city: "Berlin",
    date: "2025-06-14",
    kind: "exhibition",
    title: "Bauhaus photography exhibition"
  }
] as const

const MUSEUMS = [
  { museum: "Gulbenkian Museum", city: "Lisbon", hours: "10:00-18:00", closed: "Tuesday", ticketEur: 14 },
  { museum: "Pergamon Museum", city: "Berlin", hours: "10:00-18:00", closed: "Monday", ticketEur: 19 }
] as const

const localEvents = () =>
  definePlugin({
    name: "local-events",
    manifest: {
      title: "Local Events and Museums",
      summary: "What's on in a city: concerts, festivals, exhibitions by date, and museum opening hours.",
      whenToUse: [
        "The user asks what events, concerts, festivals or exhibitions are on in a city.",
        "The user asks when a museum opens, its closing day or ticket price."
      ],
      whenNotToUse: ["Films playing in cinemas: use movie-showtimes."],
      examples: [
        {
          user: "What concerts and events are on in Lisbon on 2025-06-14?",
          tool: "search_events",
          args: { city: "Lisbon", date: "2025-06-14" }
        },
        {
          user: "When is the Gulbenkian Museum open?",
          tool: "museum_hours",
          args: { museum: "Gulbenkian Museum" }
        }
      ],
      tags: ["events", "concerts", "festivals", "museums", "exhibitions"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "search_events",
        description: "Events in a city, optionally on one date.",
        input: Schema.Struct({ city: text("City", 100), date: Schema.optional(isoDate("Date")) }),
        handler: ({ city, date }) => ({
          city,
          events: EVENTS.filter(
            (e) => e.city.toLowerCase() === city.toLowerCase() && (date === undefined || e.date === date)
          )
        })
      }),
      defineTool({
        name: "museum_hours",
        description: "Opening hours, closing day and ticket price of a museum.",
        input: Schema.Struct({ museum: text("Museum name", 100) }),
        handler: ({ museum }) => lookup(MUSEUMS, "museum", museum, "museum")
      })
    ]
  })

const SHOWTIMES = [
  {
    title: "The Long Orbit",
    cinema: "Cinema São Jorge",
    city: "Lisbon",
    times: ["18:30", "21:15"],
    rating: "M/12",
    minutes: 128
  },
  {
    title: "Paper Lanterns",
    cinema: "Cinema São Jorge",
    city: "Lisbon",
    times: ["16:00"],
    rating: "M/6",
    minutes: 95
  },
  {
    title: "The Long Orbit",
    cinema: "Kino International",
    city: "Berlin",
    times: ["20:00"],
    rating: "FSK 12",
    minutes: 128
  }
] as const

const movieShowtimes = () =>
  definePlugin({
    name: "movie-showtimes",
    manifest: {
      title: "Movie Showtimes",
      summary: "Films playing in cinemas in a city today, their showtimes, age rating and running time.",
      whenToUse: [
        "The user asks what movies or films are playing at the cinema in a city.",
        "The user asks when a film is showing, its age rating or how long it runs."
      ],
      examples: [
        { user: "What movies are playing in Lisbon tonight?", tool: "showtimes", args: { city: "Lisbon" } },
        {
          user: "How long is the film The Long Orbit and when is it on?",
          tool: "film_details",
          args: { title: "The Long Orbit" }
        }
      ],
      tags: ["movies", "cinema", "films", "showtimes"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "showtimes",
        description: "Films and showtimes in a city's cinemas.",
        input: Schema.Struct({ city: text("City", 100) }),
        handler: ({ city }) => ({
          city,
          films: SHOWTIMES.filter((s) => s.city.toLowerCase() === city.toLowerCase())
        })
      }),
      defineTool({
        name: "film_details",
        description: "A film's running time, age rating and every cinema showing it.",
        input: Schema.Struct({ title: text("Film title", 200) }),
        handler: ({ title }) => {
          const shows = SHOWTIMES.filter((s) => s.title.toLowerCase() === title.toLowerCase())
          if (shows.length === 0)
            throw new Error(
              `No film '${title}' showing (fixture: ${[...new Set(SHOWTIMES.map((s) => s.title))].join(", ")}).`
            )
          return {
            title: shows[0]!.title,
            minutes: shows[0]!.minutes,
            showings: shows.map((s) => ({ cinema: s.cinema, city: s.city, times: s.times, rating: s.rating }))
          }
        }
      })
    ]
  })

/** Home and leisure plugins. */
export const homePlugins = (ctx: ExampleContext): ReadonlyArray<Plugin> => [
  carMaintenance(ctx),
  energyUsage(),
  libraryCatalog(ctx),
  localEvents(),
  movieShowtimes()
]
