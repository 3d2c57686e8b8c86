/**
 * A request's timeout that stops while its user is asked (an elicitation): the time a person
 * takes to answer is not the server's slowness (docs/waiting.md).
 */
import { SdkError, SdkErrorCode } from "@modelcontextprotocol/client"

/** The longest delay a timer takes (2^31 - 1 ms). */
export const MAX_TIMER_MS = 2_147_483_647

/**
 * A request's timeout of `ms` that can be paused: at the end it aborts `controller` with the
 * SDK's own timeout error (so the request fails `timeout` as one the SDK timed out would).
 */
export const pausedTimeout = (controller: AbortController, ms: number) => {
  let left = Math.max(1, ms)
  let since = Date.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  const arm = () => {
    since = Date.now()
    timer = setTimeout(
      () => controller.abort(new SdkError(SdkErrorCode.RequestTimeout, "Request timed out", { timeout: ms })),
      left
    )
  }
  arm()
  let paused = 0
  let stopped = false
  return {
    pause: () => {
      if (paused++ > 0) return
      clearTimeout(timer)
      left = Math.max(1, left - (Date.now() - since))
    },
    resume: () => {
      if (--paused === 0 && !stopped && !controller.signal.aborted) arm()
    },
    stop: () => {
      stopped = true
      clearTimeout(timer)
    }
  }
}
