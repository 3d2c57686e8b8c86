/**
 * The tail of a stdio server's stderr, kept for the messages of its failures (a crash names the
 * exit code and what the server last wrote; docs/failure-modes.md).
 */

/** Lines of a stdio server's stderr kept for error messages. */
const STDERR_LINES = 20
const STDERR_LINE_CHARS = 500

/** The last lines a child wrote to stderr, bounded in lines and in line length. */
export class StderrTail {
  private readonly lines: Array<string> = []
  private partial = ""

  push(chunk: unknown): void {
    const text = this.partial + String(chunk)
    const parts = text.split(/\r?\n/)
    this.partial = (parts.pop() ?? "").slice(-4 * STDERR_LINE_CHARS)
    for (const line of parts) {
      if (line.trim() === "") continue
      this.lines.push(line.length > STDERR_LINE_CHARS ? `${line.slice(0, STDERR_LINE_CHARS)}…` : line)
      if (this.lines.length > STDERR_LINES) this.lines.shift()
    }
  }

  text(): string {
    const all =
      this.partial.trim() === "" ? this.lines : [...this.lines, this.partial.slice(0, STDERR_LINE_CHARS)]
    return all.length === 0 ? "" : ` Its last stderr lines:\n  ${all.slice(-STDERR_LINES).join("\n  ")}`
  }
}
