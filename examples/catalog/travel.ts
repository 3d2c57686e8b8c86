/**
 * Travel and places plugins: geocoding and distances, flights, hotels, time zones, public
 * holidays, unit conversion and public transit. Fixed tables, no network.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import { between, intBetween, isoDate, lookup, round, text } from "./support.js"

const PLACES = [
  { place: "Eiffel Tower, Paris", lat: 48.8584, lon: 2.2945, country: "France" },
  { place: "Brandenburg Gate, Berlin", lat: 52.5163, lon: 13.3777, country: "Germany" },
  { place: "Praça do Comércio, Lisbon", lat: 38.7075, lon: -9.1364, country: "Portugal" },
  { place: "Big Ben, London", lat: 51.5007, lon: -0.1246, country: "United Kingdom" }
] as const

const findPlace = (name: string) => {
  const q = name.toLowerCase()
  const hit = PLACES.find((p) => p.place.toLowerCase().includes(q))
  if (hit === undefined)
    throw new Error(
      `Unknown place '${name}'. Known places in this offline fixture: ${PLACES.map((p) => p.place).join("; ")}.`
    )
  return hit
}

/** Great-circle distance in km (haversine). */
const haversineKm = (a: { lat: number; lon: number }, b: { lat: number; lon: number }): number => {
  const rad = Math.PI / 180
  const dLat = (b.lat - a.lat) * rad
  const dLon = (b.lon - a.lon) * rad
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLon / 2) ** 2
  return 2 * 6371 * Math.asin(Math.sqrt(h))
}

const maps = () =>
  definePlugin({
    name: "maps",
    manifest: {
      title: "Maps and Geocoding",
      summary: "Geocoding: coordinates of a place or address, the nearest place to coordinates, distances.",
      whenToUse: [
        "The user asks for the latitude and longitude (coordinates) of a place or address.",
        "The user gives coordinates and asks what place is there.",
        "The user asks how far apart two places are as the crow flies."
      ],
      whenNotToUse: ["Bus, tram or metro routes: use public-transit."],
      examples: [
        {
          user: "What are the coordinates of the Eiffel Tower?",
          tool: "geocode",
          args: { place: "Eiffel Tower" }
        },
        {
          user: "What place is at latitude 52.5163, longitude 13.3777?",
          tool: "reverse_geocode",
          args: { lat: 52.5163, lon: 13.3777 }
        },
        {
          user: "How far is Big Ben from the Eiffel Tower in km?",
          tool: "distance_between",
          args: { from: "Big Ben", to: "Eiffel Tower" }
        }
      ],
      tags: ["maps", "geocoding", "coordinates", "distance", "location"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "geocode",
        description: "Latitude and longitude of a known place or address.",
        input: Schema.Struct({ place: text("Place or address") }),
        handler: ({ place }) => findPlace(place)
      }),
      defineTool({
        name: "reverse_geocode",
        description: "The known place nearest to coordinates, and how far it is.",
        input: Schema.Struct({ lat: between(-90, 90, "Latitude"), lon: between(-180, 180, "Longitude") }),
        handler: ({ lat, lon }) => {
          const ranked = PLACES.map((p) => ({
            ...p,
            distanceKm: round(haversineKm({ lat, lon }, p), 1)
          })).sort((a, b) => a.distanceKm - b.distanceKm)
          return ranked[0]!
        }
      }),
      defineTool({
        name: "distance_between",
        description: "Straight-line distance in km between two known places.",
        input: Schema.Struct({ from: text("First place"), to: text("Second place") }),
        handler: ({ from, to }) => {
          const [a, b] = [findPlace(from), findPlace(to)]
          return { from: a.place, to: b.place, km: round(haversineKm(a, b), 1) }
        }
      })
    ]
  })

const FLIGHTS = [
  {
    flight: "TP1234",
    from: "LIS",
    to: "BER",
    date: "2025-06-10",
    departs: "07:05",
    arrives: "11:40",
    priceEur: 129
  },
  {
    flight: "LH1169",
    from: "LIS",
    to: "BER",
    date: "2025-06-10",
    departs: "13:20",
    arrives: "17:55",
    priceEur: 164
  },
  {
    flight: "BA501",
    from: "LHR",
    to: "LIS",
    date: "2025-06-10",
    departs: "08:10",
    arrives: "10:50",
    priceEur: 98
  }
] as const

const STATUS = [
  { flight: "TP1234", status: "on time", gate: "B12" },
  { flight: "LH1169", status: "delayed 35 min", gate: "A3" },
  { flight: "BA501", status: "boarding", gate: "C7" }
] as const

const Airport = Schema.String.pipe(Schema.pattern(/^[A-Za-z]{3}$/)).annotations({
  description: "IATA airport code, e.g. LIS"
})

const flights = () =>
  definePlugin({
    name: "flights",
    manifest: {
      title: "Flights",
      summary: "Searches airline flights between airports on a date, and the status and gate of a flight.",
      whenToUse: [
        "The user wants to find or compare flights between two airports or cities on a date.",
        "The user asks whether a flight is on time, delayed, or which gate it leaves from."
      ],
      whenNotToUse: ["Where a parcel is: use shipping-tracking."],
      examples: [
        {
          user: "Find flights from LIS to BER on 2025-06-10.",
          tool: "search_flights",
          args: { from: "LIS", to: "BER", date: "2025-06-10" }
        },
        { user: "Is flight LH1169 delayed?", tool: "flight_status", args: { flight: "LH1169" } }
      ],
      tags: ["flights", "airline", "airport", "travel"],
      category: "integration",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "search_flights",
        description: "Flights between two airports on a date, cheapest first.",
        input: Schema.Struct({ from: Airport, to: Airport, date: isoDate("Departure date") }),
        handler: ({ from, to, date }) => ({
          flights: FLIGHTS.filter(
            (f) => f.from === from.toUpperCase() && f.to === to.toUpperCase() && f.date === date
          ).sort((a, b) => a.priceEur - b.priceEur)
        })
      }),
      defineTool({
        name: "flight_status",
        description: "Status and gate of a flight today.",
        input: Schema.Struct({ flight: text("Flight number, e.g. TP1234", 10) }),
        handler: ({ flight }) => lookup(STATUS, "flight", flight, "flight")
      })
    ]
  })

const HOTELS = [
  { id: "H-1", name: "Alfama Courtyard", city: "Lisbon", stars: 4, nightlyEur: 145, rating: 8.9 },
  { id: "H-2", name: "Baixa Budget Rooms", city: "Lisbon", stars: 2, nightlyEur: 62, rating: 7.6 },
  { id: "H-3", name: "Spree Riverside", city: "Berlin", stars: 4, nightlyEur: 128, rating: 8.4 }
] as const

const hotels = () =>
  definePlugin({
    name: "hotels",
    manifest: {
      title: "Hotels",
      summary: "Hotel search by city with nightly prices and ratings, and the total price of a stay.",
      whenToUse: [
        "The user wants a hotel or somewhere to stay for a trip in a city.",
        "The user asks how much a hotel stay of several nights would cost."
      ],
      whenNotToUse: ["Renting or buying a home: use real-estate."],
      examples: [
        { user: "Find me a hotel in Lisbon.", tool: "search_hotels", args: { city: "Lisbon" } },
        {
          user: "How much would 3 nights at hotel H-3 cost?",
          tool: "price_stay",
          args: { id: "H-3", nights: 3 }
        }
      ],
      tags: ["hotels", "accommodation", "stay", "travel"],
      category: "integration",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "search_hotels",
        description: "Hotels of a city, best rated first, optionally under a nightly price.",
        input: Schema.Struct({
          city: text("City"),
          maxNightlyEur: Schema.optional(between(1, 10_000, "Maximum price per night, EUR"))
        }),
        handler: ({ city, maxNightlyEur }) => ({
          city,
          hotels: HOTELS.filter(
            (h) =>
              h.city.toLowerCase() === city.toLowerCase() &&
              (maxNightlyEur === undefined || h.nightlyEur <= maxNightlyEur)
          ).sort((a, b) => b.rating - a.rating)
        })
      }),
      defineTool({
        name: "price_stay",
        description: "Total price of a stay, with city tax of 2 EUR per night.",
        input: Schema.Struct({ id: text("Hotel id, e.g. H-1", 10), nights: intBetween(1, 60, "Nights") }),
        handler: ({ id, nights }) => {
          const h = lookup(HOTELS, "id", id, "hotel")
          return { hotel: h.name, nights, totalEur: h.nightlyEur * nights + 2 * nights }
        }
      })
    ]
  })

/** Standard-time UTC offsets in minutes (daylight saving is not modelled by this fixture). */
const ZONES = [
  { zone: "UTC", offset: 0 },
  { zone: "London", offset: 0 },
  { zone: "Lisbon", offset: 0 },
  { zone: "Berlin", offset: 60 },
  { zone: "New York", offset: -300 },
  { zone: "San Francisco", offset: -480 },
  { zone: "Tokyo", offset: 540 },
  { zone: "Mumbai", offset: 330 }
] as const

const fmt = (minutes: number): string => {
  const m = ((minutes % 1440) + 1440) % 1440
  return `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`
}

const timezone = () =>
  definePlugin({
    name: "timezone",
    manifest: {
      title: "Time Zones",
      summary: "Converts a clock time between cities' time zones and finds overlapping working hours.",
      whenToUse: [
        "The user asks what a given time in one city is in another city's time zone.",
        "The user wants working hours that overlap across time zones to plan a call."
      ],
      whenNotToUse: ["The current time or today's date: use clock."],
      examples: [
        {
          user: "What is 15:00 in Berlin in New York time?",
          tool: "convert_time",
          args: { time: "15:00", from: "Berlin", to: "New York" }
        },
        {
          user: "Which working hours overlap between the New York and Berlin time zones?",
          tool: "overlap_hours",
          args: { zones: ["New York", "Berlin"] }
        }
      ],
      tags: ["timezone", "utc", "time-difference", "world-clock"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "convert_time",
        description: "A HH:MM time in one zone expressed in another (standard time; DST not modelled).",
        input: Schema.Struct({
          time: Schema.String.pipe(Schema.pattern(/^([01]\d|2[0-3]):[0-5]\d$/)).annotations({
            description: "HH:MM"
          }),
          from: text("City or UTC", 40),
          to: text("City or UTC", 40)
        }),
        handler: ({ time, from, to }) => {
          const [a, b] = [lookup(ZONES, "zone", from, "zone"), lookup(ZONES, "zone", to, "zone")]
          const minutes = Number(time.slice(0, 2)) * 60 + Number(time.slice(3)) - a.offset + b.offset
          const dayShift = Math.floor(minutes / 1440)
          return { from: a.zone, to: b.zone, time, converted: fmt(minutes), dayShift }
        }
      }),
      defineTool({
        name: "overlap_hours",
        description: "The UTC window where 09:00-17:00 local time overlaps in every zone, if any.",
        input: Schema.Struct({
          zones: Schema.Array(text("City", 40)).pipe(Schema.minItems(2), Schema.maxItems(6))
        }),
        handler: ({ zones }) => {
          const rows = zones.map((z) => lookup(ZONES, "zone", z, "zone"))
          const start = Math.max(...rows.map((r) => 9 * 60 - r.offset))
          const end = Math.min(...rows.map((r) => 17 * 60 - r.offset))
          if (end <= start) return { zones: rows.map((r) => r.zone), overlap: false }
          return {
            zones: rows.map((r) => r.zone),
            overlap: true,
            local: rows.map((r) => ({ zone: r.zone, from: fmt(start + r.offset), to: fmt(end + r.offset) }))
          }
        }
      })
    ]
  })

const HOLIDAYS = [
  { country: "Portugal", date: "2025-04-25", name: "Freedom Day" },
  { country: "Portugal", date: "2025-06-10", name: "Portugal Day" },
  { country: "Portugal", date: "2025-12-25", name: "Christmas Day" },
  { country: "Germany", date: "2025-10-03", name: "German Unity Day" },
  { country: "Germany", date: "2025-12-25", name: "Christmas Day" },
  { country: "United States", date: "2025-07-04", name: "Independence Day" },
  { country: "United States", date: "2025-11-27", name: "Thanksgiving" }
] as const

const holidays = () =>
  definePlugin({
    name: "holidays",
    manifest: {
      title: "Public Holidays",
      summary: "National public holidays (bank holidays) of a country in 2025, and whether a date is one.",
      whenToUse: [
        "The user asks which public or bank holidays a country has.",
        "The user asks whether a given date is a national holiday somewhere."
      ],
      whenNotToUse: ["Requesting personal vacation days off work: use time-off."],
      examples: [
        {
          user: "What are the public holidays in Germany this year?",
          tool: "public_holidays",
          args: { country: "Germany" }
        },
        {
          user: "Is 2025-06-10 a bank holiday in Portugal?",
          tool: "is_holiday",
          args: { country: "Portugal", date: "2025-06-10" }
        }
      ],
      tags: ["holidays", "bank-holiday", "national-holiday"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "public_holidays",
        description: "Public holidays of a country in 2025.",
        input: Schema.Struct({ country: text("Country name", 60) }),
        handler: ({ country }) => {
          const list = HOLIDAYS.filter((h) => h.country.toLowerCase() === country.toLowerCase())
          if (list.length === 0)
            throw new Error(
              `No holiday data for '${country}' (fixture: ${[...new Set(HOLIDAYS.map((h) => h.country))].join(", ")}).`
            )
          return { country, year: 2025, holidays: list }
        }
      }),
      defineTool({
        name: "is_holiday",
        description: "Whether a date is a public holiday in a country.",
        input: Schema.Struct({ country: text("Country name", 60), date: isoDate("Date") }),
        handler: ({ country, date }) => {
          const hit = HOLIDAYS.find(
            (h) => h.country.toLowerCase() === country.toLowerCase() && h.date === date
          )
          return { country, date, holiday: hit !== undefined, name: hit?.name }
        }
      })
    ]
  })

/** Each unit's factor to the dimension's base unit (temperature is handled apart). */
const UNITS: Record<string, { readonly dimension: string; readonly factor: number }> = {
  m: { dimension: "length", factor: 1 },
  km: { dimension: "length", factor: 1000 },
  mi: { dimension: "length", factor: 1609.344 },
  ft: { dimension: "length", factor: 0.3048 },
  in: { dimension: "length", factor: 0.0254 },
  kg: { dimension: "mass", factor: 1 },
  g: { dimension: "mass", factor: 0.001 },
  lb: { dimension: "mass", factor: 0.45359237 },
  oz: { dimension: "mass", factor: 0.028349523125 },
  l: { dimension: "volume", factor: 1 },
  ml: { dimension: "volume", factor: 0.001 },
  gal: { dimension: "volume", factor: 3.785411784 },
  cup: { dimension: "volume", factor: 0.2365882365 }
}
const TEMPERATURE = ["c", "f", "k"]

const toKelvin = (v: number, u: string) =>
  u === "c" ? v + 273.15 : u === "f" ? ((v - 32) * 5) / 9 + 273.15 : v
const fromKelvin = (k: number, u: string) =>
  u === "c" ? k - 273.15 : u === "f" ? ((k - 273.15) * 9) / 5 + 32 : k

const unitConverter = () =>
  definePlugin({
    name: "unit-converter",
    manifest: {
      title: "Unit Converter",
      summary:
        "Converts measurements between metric and imperial units: length, weight, volume, temperature.",
      whenToUse: [
        "The user asks to convert miles, feet or inches to km or metres, or back.",
        "The user asks to convert pounds, ounces, cups, gallons, or Fahrenheit to Celsius."
      ],
      whenNotToUse: ["Converting money between currencies: use currency-converter."],
      examples: [
        {
          user: "Convert 10 miles to kilometres.",
          tool: "convert_units",
          args: { value: 10, from: "mi", to: "km" }
        },
        {
          user: "What is 350 Fahrenheit in Celsius?",
          tool: "convert_units",
          args: { value: 350, from: "f", to: "c" }
        },
        { user: "Which weight units can you convert?", tool: "list_units", args: { dimension: "mass" } }
      ],
      tags: ["units", "metric", "imperial", "measurement"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "convert_units",
        description:
          "A value converted between two units of the same dimension (m, km, mi, ft, in, kg, g, lb, oz, l, ml, gal, cup, c, f, k).",
        input: Schema.Struct({
          value: between(-1e12, 1e12, "Value"),
          from: text("Unit", 5),
          to: text("Unit", 5)
        }),
        handler: ({ value, from, to }) => {
          const [f, t] = [from.toLowerCase(), to.toLowerCase()]
          if (TEMPERATURE.includes(f) && TEMPERATURE.includes(t))
            return { value, from: f, to: t, result: round(fromKelvin(toKelvin(value, f), t), 2) }
          const [a, b] = [UNITS[f], UNITS[t]]
          if (a === undefined || b === undefined)
            throw new Error(
              `Unknown unit '${a === undefined ? from : to}'. Units: ${[...Object.keys(UNITS), ...TEMPERATURE].join(", ")}.`
            )
          if (a.dimension !== b.dimension)
            throw new Error(`Cannot convert ${a.dimension} (${from}) to ${b.dimension} (${to}).`)
          return { value, from: f, to: t, result: round((value * a.factor) / b.factor, 4) }
        }
      }),
      defineTool({
        name: "list_units",
        description: "The units known for a dimension.",
        input: Schema.Struct({ dimension: Schema.Literal("length", "mass", "volume", "temperature") }),
        handler: ({ dimension }) => ({
          dimension,
          units:
            dimension === "temperature"
              ? TEMPERATURE
              : Object.keys(UNITS).filter((u) => UNITS[u]!.dimension === dimension)
        })
      })
    ]
  })

const DEPARTURES = [
  { stop: "Central Station", line: "Tram 28", destination: "Old Town", inMinutes: [3, 15, 27] },
  { stop: "Central Station", line: "Metro Blue", destination: "Airport", inMinutes: [5, 11, 17] },
  { stop: "Harbour", line: "Bus 734", destination: "University", inMinutes: [8, 38] }
] as const

const ROUTES = [
  { from: "Central Station", to: "Airport", legs: ["Metro Blue to Airport (22 min)"], minutes: 22 },
  {
    from: "Harbour",
    to: "Old Town",
    legs: ["Bus 734 to Central Station (9 min)", "Tram 28 to Old Town (12 min)"],
    minutes: 26
  }
] as const

const publicTransit = () =>
  definePlugin({
    name: "public-transit",
    manifest: {
      title: "Public Transit",
      summary:
        "City public transport: next bus, tram and metro departures from a stop, and journey planning.",
      whenToUse: [
        "The user asks when the next bus, tram or metro leaves from a stop or station.",
        "The user asks how to get from one stop to another by public transport."
      ],
      whenNotToUse: ["Airline flights: use flights."],
      examples: [
        {
          user: "When is the next tram from Central Station?",
          tool: "next_departures",
          args: { stop: "Central Station" }
        },
        {
          user: "How do I get from Harbour to Old Town by bus or metro?",
          tool: "plan_journey",
          args: { from: "Harbour", to: "Old Town" }
        }
      ],
      tags: ["transit", "bus", "tram", "metro", "departures"],
      category: "data",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "next_departures",
        description: "Upcoming departures from a stop, by line.",
        input: Schema.Struct({ stop: text("Stop or station name", 100) }),
        handler: ({ stop }) => {
          const list = DEPARTURES.filter((d) => d.stop.toLowerCase() === stop.toLowerCase())
          if (list.length === 0)
            throw new Error(
              `Unknown stop '${stop}'. Stops: ${[...new Set(DEPARTURES.map((d) => d.stop))].join(", ")}.`
            )
          return { stop, departures: list }
        }
      }),
      defineTool({
        name: "plan_journey",
        description: "Legs and total minutes of a journey between two stops.",
        input: Schema.Struct({ from: text("Start stop", 100), to: text("Destination stop", 100) }),
        handler: ({ from, to }) => {
          const route = ROUTES.find(
            (r) => r.from.toLowerCase() === from.toLowerCase() && r.to.toLowerCase() === to.toLowerCase()
          )
          if (route === undefined)
            throw new Error(`No journey from '${from}' to '${to}' in this offline fixture.`)
          return route
        }
      })
    ]
  })

/** Travel and places plugins. */
export const travelPlugins = (): ReadonlyArray<Plugin> => [
  maps(),
  flights(),
  hotels(),
  timezone(),
  holidays(),
  unitConverter(),
  publicTransit()
]
