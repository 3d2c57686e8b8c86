/**
 * The operator's list of network hosts a skill's script may reach through the sandbox's proxy
 * (docs/skills-that-run.md#the-sandbox). An entry is `host` or `host:port`: a DNS name, an IP
 * literal (IPv6 in brackets when it has a port), or `*.name` for every subdomain of `name` (not
 * `name` itself); without a port, any port. The proxy matches the host a request names, after the
 * same canonical form a URL gives it (`127.1` is `127.0.0.1`, names lowercased), and connects to
 * that canonical form: what is checked is what is reached.
 */
import { isIP } from "node:net"

/** One entry of the list, parsed. */
export interface AllowedHost {
  /** The canonical host: a lowercase name, an IPv4 literal, or an IPv6 literal without brackets. */
  readonly host: string
  /** `*.host`: any subdomain of `host`, and not `host` itself. */
  readonly subdomains: boolean
  /** The one port allowed; undefined allows any. */
  readonly port: number | undefined
  /** The entry as the operator wrote it. */
  readonly entry: string
}

/** What `parseAllowHosts` gives: the entries that parsed, and a sentence for each that did not. */
export interface ParsedAllowHosts {
  readonly hosts: ReadonlyArray<AllowedHost>
  readonly errors: ReadonlyArray<string>
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/

/** A DNS name of letters, digits, `-` and `_` (lowercased), or undefined. Its last label is not all digits: that is an IPv4 form. */
const dnsName = (text: string): string | undefined => {
  const name = text.toLowerCase().replace(/\.$/, "")
  if (name.length === 0 || name.length > 253) return undefined
  const labels = name.split(".")
  if (!labels.every((l) => LABEL.test(l))) return undefined
  return /^\d+$/.test(labels[labels.length - 1]!) ? undefined : name
}

const portOf = (text: string): number | undefined => {
  if (!/^\d{1,5}$/.test(text)) return undefined
  const port = Number(text)
  return port >= 1 && port <= 65535 ? port : undefined
}

const SHAPE =
  "an entry is host or host:port (a DNS name, an IP address, [IPv6]:port, or *.name for its subdomains; port 1 to 65535)"

/** One entry parsed, or the sentence saying what is wrong with it. */
export const parseAllowHost = (entry: string): AllowedHost | string => {
  const text = entry.trim()
  const bad = `${JSON.stringify(text.slice(0, 120))} is not a host to allow: ${SHAPE}.`
  if (isIP(text) === 6) return { host: canonicalIp(text), subdomains: false, port: undefined, entry: text }
  let hostText = text
  let port: number | undefined
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(text)
  if (bracketed !== null) {
    if (isIP(bracketed[1]!) !== 6) return bad
    if (bracketed[2] !== undefined) {
      port = portOf(bracketed[2])
      if (port === undefined) return bad
    }
    return { host: canonicalIp(bracketed[1]!), subdomains: false, port, entry: text }
  }
  const colon = text.lastIndexOf(":")
  if (colon >= 0) {
    hostText = text.slice(0, colon)
    port = portOf(text.slice(colon + 1))
    if (port === undefined) return bad
  }
  if (isIP(hostText) === 4) return { host: hostText, subdomains: false, port, entry: text }
  const subdomains = hostText.startsWith("*.")
  const name = dnsName(subdomains ? hostText.slice(2) : hostText)
  if (name === undefined) return bad
  return { host: name, subdomains, port, entry: text }
}

/**
 * The list parsed: every entry that is one, and a sentence quoting each that is not. Empty
 * entries are skipped. Exported for hosts that read the list from their configuration.
 */
export const parseAllowHosts = (list: ReadonlyArray<string>): ParsedAllowHosts => {
  const hosts: AllowedHost[] = []
  const errors: string[] = []
  for (const entry of list) {
    if (entry.trim() === "") continue
    const parsed = parseAllowHost(entry)
    if (typeof parsed === "string") errors.push(parsed)
    else hosts.push(parsed)
  }
  return { hosts, errors }
}

const canonicalIp = (ip: string): string => new URL(`http://[${ip}]`).hostname.slice(1, -1)

/**
 * The canonical form of a host a request names, as a URL reads it (`127.1` → `127.0.0.1`,
 * `[::0:1]` → `::1`, names lowercased and punycoded, a trailing dot dropped), or undefined when it
 * is not a host. The proxy both matches and connects to this form.
 */
export const canonicalHost = (host: string): string | undefined => {
  if (host === "" || /[\s/?#@\\]/.test(host)) return undefined
  try {
    const name = new URL(`http://${host}`).hostname.replace(/\.$/, "")
    if (name === "") return undefined
    return name.startsWith("[") ? name.slice(1, -1) : name
  } catch {
    return undefined
  }
}

/** Whether `host` (canonical, as `canonicalHost` gives it) on `port` matches an entry of the list. */
export const isAllowed = (hosts: ReadonlyArray<AllowedHost>, host: string, port: number): boolean =>
  hosts.some(
    (h) =>
      (h.port === undefined || h.port === port) &&
      (h.subdomains ? host.endsWith(`.${h.host}`) && isIP(host) === 0 : host === h.host)
  )
