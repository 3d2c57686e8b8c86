/**
 * The catalog as one user's grants see it (`Access.View`, re-exported there), and what a
 * restricted view keeps of its own (`ViewIndex`). A leaf, so that `CatalogIndex` can hold the
 * views of its catalog without importing `Access`.
 */
import type { Grants } from "./capability.js"
import type { OfferPrefix } from "./offered.js"

/**
 * What a view that denies or hides something keeps for itself, built on first use: the same
 * structures as the catalog's `CatalogIndex`, without what the view leaves out.
 */
export interface ViewIndex {
  /** The Tier-1 block without the always plugins the view denies (`Tier1.renderFor`). */
  readonly tier1: string
  /** The always-tier prompt sections without the denied plugins' (`SystemPrompt`). */
  readonly alwaysSections: ReadonlyArray<string>
  /** Meta-tools and the allowed always-tier tools, and the allowed on-demand ones (`Offer.offer`). */
  readonly offer: OfferPrefix
}

/** The catalog as one user's grants see it. */
export interface View {
  /** The grants this view was made for. */
  readonly grants: Grants
  /** True when nothing is denied or hidden: every query behaves as without requirements. */
  readonly open: boolean
  /** Plugins whose own requirements the user lacks: name → the reason (`deniedReason`). */
  readonly denied: ReadonlyMap<string, string>
  /**
   * Tool names the user may not be offered: every tool of a denied plugin, and each tool whose
   * own `requires` the user lacks.
   */
  readonly hiddenTools: ReadonlySet<string>
  /**
   * The view's own derived structures, when it is not `open` (an open view reads the catalog's
   * `CatalogIndex` instead). Made by `Access.view` with the view, for the catalog it was made for.
   */
  readonly index?: ViewIndex | undefined
}
