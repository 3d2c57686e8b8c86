/**
 * A plugin: its manifest tells the agent what it is for (list_capabilities shows the title and
 * summary; load_capability returns the whole manifest), and its tool does the work. Its
 * visibility is `on-demand` (the default): the agent is offered `compute_tip` only after it has
 * loaded the plugin, so the plugin costs nothing in a turn that does not need it.
 */
import { definePlugin, defineTool } from "@plugboard/core"
import { Schema } from "effect"

/** The tip on a bill, the total, and each person's share, rounded to cents. */
export const computeTip = (bill: number, percent: number, people = 1) => {
  const cents = (amount: number) => Math.round(amount * 100) / 100
  const tip = cents((bill * percent) / 100)
  return { tip, total: cents(bill + tip), perPerson: cents((bill + tip) / people) }
}

export const tip = definePlugin({
  name: "tip",
  manifest: {
    title: "Tip Calculator",
    summary: "Works out the tip on a bill, the total, and what each person pays.",
    whenToUse: ["The user asks how much to tip, or how to split a bill between people."],
    examples: [
      { user: "What is a 15% tip on a bill of 80?", tool: "compute_tip", args: { bill: 80, percent: 15 } },
      {
        user: "Split a bill of 120 between 4 people with a 20% tip.",
        tool: "compute_tip",
        args: { bill: 120, percent: 20, people: 4 }
      }
    ],
    tags: ["tip", "bill", "restaurant"],
    category: "data"
  },
  tools: [
    defineTool({
      name: "compute_tip",
      description: "The tip on a bill at a percentage, the total, and each person's share.",
      input: Schema.Struct({
        bill: Schema.Number.pipe(Schema.nonNegative()),
        percent: Schema.Number.pipe(Schema.between(0, 100)),
        people: Schema.optional(Schema.Int.pipe(Schema.between(1, 100)))
      }),
      handler: ({ bill, percent, people }) => computeTip(bill, percent, people)
    })
  ]
})
