/** Plugins the SDK tests' server runs (loaded in the server's process, see server.ts). */
import type { Plugin } from "@plugboard/core"
import { slowJobWith } from "../helpers.js"

/**
 * The slow job of the other host tests (`slowJobWith`), taking `cleanupMs` to let go once aborted.
 * The cleanup keeps the turn's end well behind the answer to `POST /messages/abort`: the SDK's
 * `abortStream()` throws a TypeError when the turn settles while its abort request is still in
 * flight (dist/index.js:1625, after `settleStream` cleared the controller at :1683).
 */
export const slowJob = (cleanupMs: number): Plugin => slowJobWith(cleanupMs)
