/**
 * Debian's Chromium driven by playwright-core (the full playwright package downloads its own
 * browsers at install time, which fails offline). `.ci/run` installs `chromium`; locally the
 * browser tests say they were skipped, and why, when /usr/bin/chromium is absent.
 */
import { existsSync } from "node:fs"
import { type Browser, chromium } from "playwright-core"

/** Where Debian's package puts the browser (`CHROMIUM_PATH` overrides). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"

/** Why the browser tests cannot run here, or undefined when they can. */
export const chromiumMissing = (): string | undefined =>
  existsSync(CHROMIUM)
    ? undefined
    : `${CHROMIUM} is absent (apt-get install -y chromium; .ci/run installs it), so the console's browser tests are skipped`

/** A headless Chromium; `--no-sandbox` because CI runs as root, where Chromium's sandbox refuses to start. */
export const launch = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
  })

/**
 * What page-side predicates (functions run in the page by `waitForFunction`) touch of the page:
 * this project type-checks without DOM types. Declare `document` with it where a predicate is
 * written.
 */
export interface PageDocument {
  readonly documentElement: { readonly dataset: Readonly<Record<string, string | undefined>> }
  querySelectorAll(
    selector: string
  ): ArrayLike<{ getAttribute(name: string): string | null }> &
    Iterable<{ getAttribute(name: string): string | null }>
}
