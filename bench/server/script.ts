/**
 * The scripted turn both servers of `pnpm bench server` replay, so that both run the same stand-in
 * model and the comparison measures the servers, not the model: `load_capability` (weather), then
 * `get_current_weather` for Berlin, then the answer plugboard's scripted router gives to this
 * turn (the load client checks it names Berlin). Each step is read from the thread itself, so
 * concurrent turns need no shared cursor.
 *
 * `BENCH_SCRIPT=answer` gives the answer at the first call instead (one model step, no tool call):
 * what a server costs per turn around the agent, against the default's per-step cost.
 */
import type { ScriptedReply, ScriptedTurn } from "@plugboard/models"

/** The answer's text (the model streams it in three chunks). */
export const ANSWER =
  "Here is what Weather (get_current_weather) returned: city: Berlin, source: offline fixture, " +
  "temperatureC: 22.9, condition: thunderstorms, precipitationMm: 9.2, windKmh: 27.4."

/** The turn's steps: `tools` (the default: load, call, answer) or `answer` (the answer at once). */
export const SCRIPT = process.env.BENCH_SCRIPT ?? "tools"
if (SCRIPT !== "tools" && SCRIPT !== "answer") throw new Error(`BENCH_SCRIPT=${SCRIPT}: tools or answer`)

/** The next step of the turn, from the last message of the thread. */
export const respond = ({ messages }: ScriptedTurn): ScriptedReply => {
  if (SCRIPT === "answer") return ANSWER
  const last = messages.at(-1)
  const tool = last?.getType() === "tool" ? (last as { name?: string }).name : undefined
  if (tool === undefined) return { tool: "load_capability", args: { names: ["weather"] } }
  if (tool === "load_capability") return { tool: "get_current_weather", args: { city: "Berlin" } }
  return ANSWER
}
