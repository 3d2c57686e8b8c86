/**
 * The server's default logger: one line per record on stderr, `level message {fields}`; `debug`
 * only when `PLUGBOARD_DEBUG` is set. Hosts pass their own `RuntimeLogger` to route records elsewhere.
 */
import type { RuntimeLogger } from "@plugboard/core"

const line = (level: string, message: string, fields?: Record<string, unknown>) => {
  let extra = ""
  if (fields !== undefined && Object.keys(fields).length > 0) {
    try {
      extra = ` ${JSON.stringify(fields)}`
    } catch {
      extra = " [unserialisable fields]"
    }
  }
  process.stderr.write(`[${level}] ${message}${extra}\n`)
}

/** Logs to stderr. */
export const consoleLogger: RuntimeLogger = {
  debug: (m, f) => {
    if (process.env.PLUGBOARD_DEBUG) line("debug", m, f)
  },
  info: (m, f) => line("info", m, f),
  warn: (m, f) => line("warn", m, f),
  error: (m, f) => line("error", m, f)
}

/** Drops everything below `error` (tests and benchmarks). */
export const quietLogger: RuntimeLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: (m, f) => line("error", m, f)
}
