/**
 * Markets and money plugins: stock quotes, crypto prices, currency conversion and real-estate
 * listings. Prices are a fixed offline fixture, and each manifest says so: an agent must never
 * present them as live market data.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import { between, intBetween, lookup, round, text } from "./support.js"

const STOCKS = [
  {
    symbol: "ACME",
    name: "Acme Corp",
    price: 182.4,
    changePercent: 1.2,
    history: [176.1, 178.9, 180.2, 180.2, 182.4]
  },
  {
    symbol: "GLBX",
    name: "Globex",
    price: 54.75,
    changePercent: -0.8,
    history: [57.3, 56.2, 55.9, 55.2, 54.75]
  },
  {
    symbol: "INIT",
    name: "Initech",
    price: 12.06,
    changePercent: 0.3,
    history: [11.8, 11.9, 12.1, 12.02, 12.06]
  }
] as const

const stockQuotes = () =>
  definePlugin({
    name: "stock-quotes",
    manifest: {
      title: "Stock Quotes",
      summary: "Share prices and recent price history by ticker symbol (offline fixture, not live data).",
      whenToUse: [
        "The user asks for the stock price or share price of a company or ticker symbol.",
        "The user asks how a stock has moved over the last trading days."
      ],
      whenNotToUse: ["Cryptocurrency prices: use crypto-prices."],
      examples: [
        { user: "What's the share price of ACME?", tool: "stock_quote", args: { symbol: "ACME" } },
        {
          user: "How has Globex stock moved this week?",
          tool: "stock_history",
          args: { symbol: "GLBX", days: 5 }
        }
      ],
      tags: ["stocks", "shares", "ticker", "equities"],
      category: "data",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "stock_quote",
        description: "Last price and daily change of a ticker (fixture data).",
        input: Schema.Struct({ symbol: text("Ticker symbol, e.g. ACME", 10) }),
        handler: ({ symbol }) => {
          const { history: _h, ...quote } = lookup(STOCKS, "symbol", symbol, "ticker")
          return { ...quote, source: "offline fixture" }
        }
      }),
      defineTool({
        name: "stock_history",
        description: "Closing prices of the last N trading days, oldest first (fixture data).",
        input: Schema.Struct({
          symbol: text("Ticker symbol", 10),
          days: intBetween(1, 5, "Trading days (1-5)")
        }),
        handler: ({ symbol, days }) => {
          const s = lookup(STOCKS, "symbol", symbol, "ticker")
          return { symbol: s.symbol, closes: s.history.slice(-days), source: "offline fixture" }
        }
      })
    ]
  })

const COINS = [
  { coin: "bitcoin", symbol: "BTC", usd: 67_250, change24h: 2.1, marketCapB: 1327 },
  { coin: "ethereum", symbol: "ETH", usd: 3_480, change24h: -1.4, marketCapB: 418 },
  { coin: "solana", symbol: "SOL", usd: 162.3, change24h: 4.8, marketCapB: 75 }
] as const

const USD_PER = { USD: 1, EUR: 1.08, GBP: 1.27 } as const

const cryptoPrices = () =>
  definePlugin({
    name: "crypto-prices",
    manifest: {
      title: "Crypto Prices",
      summary: "Cryptocurrency prices (bitcoin, ethereum, solana) and 24h moves (offline fixture, not live).",
      whenToUse: [
        "The user asks for the price of bitcoin, ethereum or another cryptocurrency.",
        "The user asks how the crypto market moved in the last 24 hours."
      ],
      whenNotToUse: ["Company shares: use stock-quotes.", "Converting fiat money: use currency-converter."],
      examples: [
        {
          user: "What's the bitcoin price in euros?",
          tool: "crypto_price",
          args: { coin: "bitcoin", currency: "EUR" }
        },
        { user: "How is the crypto market doing today?", tool: "crypto_market", args: {} }
      ],
      tags: ["crypto", "bitcoin", "ethereum", "cryptocurrency"],
      category: "data",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "crypto_price",
        description: "Price of a coin in USD, EUR or GBP (fixture data).",
        input: Schema.Struct({
          coin: text("Coin name or symbol, e.g. bitcoin", 40),
          currency: Schema.optionalWith(Schema.Literal("USD", "EUR", "GBP"), {
            default: () => "USD" as const
          })
        }),
        handler: ({ coin, currency }) => {
          const c = COINS.find((x) => x.symbol === coin.toUpperCase()) ?? lookup(COINS, "coin", coin, "coin")
          return {
            coin: c.coin,
            currency,
            price: round(c.usd / USD_PER[currency]),
            change24h: c.change24h,
            source: "offline fixture"
          }
        }
      }),
      defineTool({
        name: "crypto_market",
        description: "Every tracked coin with its 24h change, biggest market cap first (fixture data).",
        input: Schema.Struct({}),
        handler: () => ({
          coins: [...COINS].sort((a, b) => b.marketCapB - a.marketCapB),
          source: "offline fixture"
        })
      })
    ]
  })

/** Units of each currency per euro (fixture rates). */
const PER_EUR = { EUR: 1, USD: 1.08, GBP: 0.85, JPY: 169.2, CHF: 0.97, BRL: 5.84 } as const
const Currency = Schema.Literal("EUR", "USD", "GBP", "JPY", "CHF", "BRL")

const currencyConverter = () =>
  definePlugin({
    name: "currency-converter",
    manifest: {
      title: "Currency Converter",
      summary: "Converts money between currencies (EUR, USD, GBP, JPY, CHF, BRL) at fixture exchange rates.",
      whenToUse: [
        "The user wants to convert money from one currency to another, e.g. euros to dollars.",
        "The user asks for the exchange rate between two currencies."
      ],
      whenNotToUse: ["Converting measurements like kilometres or pounds of weight: use unit-converter."],
      examples: [
        {
          user: "Convert 250 euros to dollars.",
          tool: "convert_currency",
          args: { amount: 250, from: "EUR", to: "USD" }
        },
        {
          user: "What's the exchange rate from GBP to JPY?",
          tool: "exchange_rate",
          args: { from: "GBP", to: "JPY" }
        }
      ],
      tags: ["currency", "exchange-rate", "forex", "money"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "convert_currency",
        description: "An amount converted from one currency to another.",
        input: Schema.Struct({ amount: between(0, 1e12, "Amount"), from: Currency, to: Currency }),
        handler: ({ amount, from, to }) => {
          const rate = PER_EUR[to] / PER_EUR[from]
          return {
            amount,
            from,
            to,
            rate: round(rate, 6),
            converted: round(amount * rate),
            source: "offline fixture"
          }
        }
      }),
      defineTool({
        name: "exchange_rate",
        description: "Units of `to` per one unit of `from`.",
        input: Schema.Struct({ from: Currency, to: Currency }),
        handler: ({ from, to }) => ({
          from,
          to,
          rate: round(PER_EUR[to] / PER_EUR[from], 6),
          source: "offline fixture"
        })
      })
    ]
  })

const LISTINGS = [
  { id: "RE-1", city: "Lisbon", kind: "sale", price: 420_000, bedrooms: 2, areaM2: 85 },
  { id: "RE-2", city: "Lisbon", kind: "rent", price: 1_650, bedrooms: 1, areaM2: 55 },
  { id: "RE-3", city: "Porto", kind: "sale", price: 310_000, bedrooms: 3, areaM2: 110 },
  { id: "RE-4", city: "Berlin", kind: "rent", price: 2_100, bedrooms: 3, areaM2: 92 }
] as const

const realEstate = () =>
  definePlugin({
    name: "real-estate",
    manifest: {
      title: "Real Estate Listings",
      summary: "Homes for sale or rent by city, price and bedrooms, plus a monthly mortgage estimate.",
      whenToUse: [
        "The user is looking for an apartment or house to buy or rent in a city.",
        "The user asks what the monthly mortgage payment on a property price would be."
      ],
      whenNotToUse: ["Hotel stays for a trip: use hotels."],
      examples: [
        {
          user: "Find apartments for rent in Lisbon.",
          tool: "search_listings",
          args: { city: "Lisbon", kind: "rent" }
        },
        {
          user: "Monthly mortgage on a 310000 house with 20% down at 3.5% over 30 years?",
          tool: "mortgage_estimate",
          args: { price: 310000, downPaymentPercent: 20, ratePercent: 3.5, years: 30 }
        }
      ],
      tags: ["real-estate", "apartments", "housing", "mortgage", "rent"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "search_listings",
        description: "Listings in a city, for sale or rent, optionally with a minimum of bedrooms.",
        input: Schema.Struct({
          city: text("City"),
          kind: Schema.Literal("sale", "rent"),
          minBedrooms: Schema.optionalWith(intBetween(0, 10, "Minimum bedrooms"), { default: () => 0 })
        }),
        handler: ({ city, kind, minBedrooms }) => ({
          city,
          kind,
          listings: LISTINGS.filter(
            (l) => l.city.toLowerCase() === city.toLowerCase() && l.kind === kind && l.bedrooms >= minBedrooms
          )
        })
      }),
      defineTool({
        name: "mortgage_estimate",
        description: "Monthly payment of a fixed-rate mortgage (annuity formula).",
        input: Schema.Struct({
          price: between(1000, 1e9, "Property price"),
          downPaymentPercent: between(0, 100, "Down payment, percent of price"),
          ratePercent: between(0, 25, "Annual interest rate, percent"),
          years: intBetween(1, 40, "Term in years")
        }),
        handler: ({ price, downPaymentPercent, ratePercent, years }) => {
          const principal = price * (1 - downPaymentPercent / 100)
          const r = ratePercent / 100 / 12
          const n = years * 12
          const monthly = r === 0 ? principal / n : (principal * r) / (1 - (1 + r) ** -n)
          return {
            principal: round(principal),
            monthlyPayment: round(monthly),
            totalInterest: round(monthly * n - principal)
          }
        }
      })
    ]
  })

/** Markets and money plugins. */
export const marketsPlugins = (): ReadonlyArray<Plugin> => [
  stockQuotes(),
  cryptoPrices(),
  currencyConverter(),
  realEstate()
]
