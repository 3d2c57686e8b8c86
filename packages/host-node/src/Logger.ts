/**
 * The server's default logger: one record per line on stderr, as text (`[level] message
 * {fields}`) or JSON (`{"time","level","msg",...fields}`, for log collectors), from the least
 * severe level configured (`LOG_LEVEL`, `LOG_FORMAT`). Hosts pass their own `RuntimeLogger` to
 * route records elsewhere.
 */
import type { RuntimeLogger } from "@plugboard/core"

/** Log levels, least severe first. */
export type LogLevel = "debug" | "info" | "warn" | "error"
const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 }

/** How the console logger writes. */
export interface ConsoleLoggerOptions {
  readonly level?: LogLevel | undefined
  readonly format?: "text" | "json" | undefined
  /** Where lines go (default stderr). */
  readonly write?: ((line: string) => void) | undefined
}

const fieldsText = (fields?: Record<string, unknown>): string => {
  if (fields === undefined || Object.keys(fields).length === 0) return ""
  try {
    return ` ${JSON.stringify(fields)}`
  } catch {
    return " [unserialisable fields]"
  }
}

const jsonLine = (level: LogLevel, message: string, fields?: Record<string, unknown>): string => {
  const record = { time: new Date().toISOString(), level, msg: message }
  try {
    return JSON.stringify({ ...fields, ...record })
  } catch {
    return JSON.stringify({ ...record, fields: "[unserialisable fields]" })
  }
}

/** A DID as a log shows it: enough to tell users apart, not the whole key. */
export const shortDid = (did: string): string => (did.length > 16 ? `…${did.slice(-8)}` : did)

/** A logger writing one line per record from `level` up, as text or JSON. */
export const makeConsoleLogger = (options: ConsoleLoggerOptions = {}): RuntimeLogger => {
  const min = RANK[options.level ?? "info"]
  const write = options.write ?? ((line: string) => void process.stderr.write(`${line}\n`))
  const json = options.format === "json"
  const at =
    (level: LogLevel) =>
    (message: string, fields?: Record<string, unknown>): void => {
      if (RANK[level] < min) return
      write(json ? jsonLine(level, message, fields) : `[${level}] ${message}${fieldsText(fields)}`)
    }
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }
}

/** Logs to stderr from `info` up (`debug` too when `PLUGBOARD_DEBUG` is set). */
export const consoleLogger: RuntimeLogger = makeConsoleLogger({
  level: process.env.PLUGBOARD_DEBUG ? "debug" : "info"
})

/** Drops everything below `error` (tests and benchmarks). */
export const quietLogger: RuntimeLogger = makeConsoleLogger({ level: "error" })
