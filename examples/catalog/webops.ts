/**
 * Web operations plugins: DNS and IP lookups, the password policy checker and product
 * analytics. All answer from fixed tables (the DNS data is a fixture, never a live lookup).
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import { lookup, round, text } from "./support.js"

const DNS = [
  { domain: "example.com", type: "A", values: ["93.184.215.14"] },
  { domain: "example.com", type: "MX", values: ["0 ."] },
  { domain: "plugboard.dev", type: "A", values: ["203.0.113.10", "203.0.113.11"] },
  { domain: "plugboard.dev", type: "TXT", values: ["v=spf1 include:_spf.example.net ~all"] }
] as const

const IPS = [
  { ip: "93.184.215.14", network: "93.184.215.0/24", asn: "AS15133", org: "Edgecast", country: "US" },
  {
    ip: "203.0.113.10",
    network: "203.0.113.0/24",
    asn: "AS64500",
    org: "Documentation range (TEST-NET-3)",
    country: "ZZ"
  }
] as const

const dnsLookup = () =>
  definePlugin({
    name: "dns-lookup",
    manifest: {
      title: "DNS and IP Lookup",
      summary:
        "DNS records (A, MX, TXT) of a domain and the network owner of an IP address (offline fixture).",
      whenToUse: [
        "The user asks which IP address a domain or hostname resolves to, or its MX/TXT DNS records.",
        "The user asks who owns an IP address, its ASN or its country."
      ],
      examples: [
        {
          user: "What IP does plugboard.dev resolve to?",
          tool: "resolve_dns",
          args: { domain: "plugboard.dev", type: "A" }
        },
        { user: "Who owns the IP 93.184.215.14?", tool: "ip_info", args: { ip: "93.184.215.14" } }
      ],
      tags: ["dns", "ip", "domain", "network", "asn"],
      category: "data",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "resolve_dns",
        description: "DNS records of one type for a domain.",
        input: Schema.Struct({ domain: text("Domain name", 253), type: Schema.Literal("A", "MX", "TXT") }),
        handler: ({ domain, type }) => {
          const rec = DNS.find((d) => d.domain === domain.toLowerCase() && d.type === type)
          return { domain, type, values: rec?.values ?? [], found: rec !== undefined }
        }
      }),
      defineTool({
        name: "ip_info",
        description: "Network, ASN, organisation and country of an IPv4 address.",
        input: Schema.Struct({
          ip: Schema.String.pipe(Schema.pattern(/^(\d{1,3}\.){3}\d{1,3}$/)).annotations({
            description: "IPv4 address"
          })
        }),
        handler: ({ ip }) => lookup(IPS, "ip", ip, "IP address")
      })
    ]
  })

const POLICIES = [
  { policy: "standard", minLength: 12, requireSymbol: false, requireDigit: true, rotationDays: 0 },
  { policy: "admin", minLength: 16, requireSymbol: true, requireDigit: true, rotationDays: 90 }
] as const

const passwordPolicy = () =>
  definePlugin({
    name: "password-policy",
    manifest: {
      title: "Password Policy",
      summary:
        "Checks a password against the company password policy and explains the rules; stores nothing.",
      whenToUse: [
        "The user asks whether a password is strong enough or meets the password policy.",
        "The user asks what the password rules are (length, symbols, rotation)."
      ],
      examples: [
        {
          user: "Does the password Summer2025 meet our password policy?",
          tool: "check_password",
          args: { password: "Summer2025", policy: "standard" }
        },
        {
          user: "What are the password rules for admin accounts?",
          tool: "password_rules",
          args: { policy: "admin" }
        }
      ],
      tags: ["password", "security", "policy", "strength"],
      category: "auth",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "check_password",
        description: "Which rules of a policy a password breaks; the password is never stored or logged.",
        input: Schema.Struct({
          password: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256)),
          policy: Schema.optionalWith(Schema.Literal("standard", "admin"), {
            default: () => "standard" as const
          })
        }),
        handler: ({ password, policy }) => {
          const p = lookup(POLICIES, "policy", policy, "policy")
          const failures: Array<string> = []
          if (password.length < p.minLength) failures.push(`at least ${p.minLength} characters`)
          if (p.requireDigit && !/\d/.test(password)) failures.push("a digit")
          if (p.requireSymbol && !/[^A-Za-z0-9]/.test(password)) failures.push("a symbol")
          if (/^(password|summer|winter|qwerty|123456)/i.test(password))
            failures.push("no common word at the start")
          return { policy, length: password.length, meetsPolicy: failures.length === 0, missing: failures }
        }
      }),
      defineTool({
        name: "password_rules",
        description: "The rules of a password policy.",
        input: Schema.Struct({ policy: Schema.Literal("standard", "admin") }),
        handler: ({ policy }) => lookup(POLICIES, "policy", policy, "policy")
      })
    ]
  })

const METRICS = {
  "active-users": { "2025-04": 18_400, "2025-05": 21_050 },
  signups: { "2025-04": 1_240, "2025-05": 1_515 },
  "conversion-rate": { "2025-04": 3.1, "2025-05": 3.4 }
} as const

const TOP_PAGES = [
  { page: "/pricing", views: 48_200 },
  { page: "/docs/getting-started", views: 31_900 },
  { page: "/blog/tiered-plugins", views: 12_300 }
] as const

const Metric = Schema.Literal("active-users", "signups", "conversion-rate")
const Month = Schema.Literal("2025-04", "2025-05")

const analytics = () =>
  definePlugin({
    name: "analytics",
    manifest: {
      title: "Product Analytics",
      summary:
        "Website and product analytics: active users, signups, conversion rate and top pages by month.",
      whenToUse: [
        "The user asks for a product metric (active users, signups, conversion rate) for a month.",
        "The user asks how a metric changed month over month.",
        "The user asks which website pages get the most traffic or views."
      ],
      examples: [
        {
          user: "How many active users did we have in 2025-05?",
          tool: "get_metric",
          args: { metric: "active-users", month: "2025-05" }
        },
        {
          user: "How did signups change from April to May?",
          tool: "compare_months",
          args: { metric: "signups", from: "2025-04", to: "2025-05" }
        },
        { user: "Which pages on the website get the most traffic?", tool: "top_pages", args: {} }
      ],
      tags: ["analytics", "metrics", "kpi", "traffic"],
      category: "observability",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "get_metric",
        description: "One metric's value for a month.",
        input: Schema.Struct({ metric: Metric, month: Month }),
        handler: ({ metric, month }) => ({ metric, month, value: METRICS[metric][month] })
      }),
      defineTool({
        name: "compare_months",
        description: "A metric in two months, with the absolute and percent change.",
        input: Schema.Struct({ metric: Metric, from: Month, to: Month }),
        handler: ({ metric, from, to }) => {
          const a = METRICS[metric][from]
          const b = METRICS[metric][to]
          return { metric, from: a, to: b, change: round(b - a), percent: round(((b - a) / a) * 100, 1) }
        }
      }),
      defineTool({
        name: "top_pages",
        description: "The most viewed pages of the last month.",
        input: Schema.Struct({}),
        handler: () => ({ pages: TOP_PAGES })
      })
    ]
  })

/** Web operations plugins. */
export const webopsPlugins = (): ReadonlyArray<Plugin> => [dnsLookup(), passwordPolicy(), analytics()]
