/**
 * Everyday-life plugins: recipes, nutrition facts, a fitness log, medication reminders, plant
 * care and pet care. Health-adjacent plugins say plainly that they give no medical advice.
 */
import { definePlugin, defineTool, type Plugin } from "@plugboard/core"
import { Schema } from "effect"
import {
  between,
  type ExampleContext,
  ExampleStore,
  intBetween,
  isoDate,
  lookup,
  round,
  text
} from "./support.js"

const RECIPES = [
  {
    id: "R-1",
    name: "Tomato basil pasta",
    servings: 2,
    minutes: 20,
    ingredients: [
      { item: "spaghetti", grams: 200 },
      { item: "tomato", grams: 300 },
      { item: "basil", grams: 10 }
    ]
  },
  {
    id: "R-2",
    name: "Chickpea curry",
    servings: 4,
    minutes: 35,
    ingredients: [
      { item: "chickpeas", grams: 480 },
      { item: "coconut milk", grams: 400 },
      { item: "onion", grams: 150 }
    ]
  },
  {
    id: "R-3",
    name: "Banana oat pancakes",
    servings: 2,
    minutes: 15,
    ingredients: [
      { item: "banana", grams: 120 },
      { item: "oats", grams: 80 },
      { item: "egg", grams: 100 }
    ]
  }
] as const

const recipes = () =>
  definePlugin({
    name: "recipes",
    manifest: {
      title: "Recipes",
      summary: "Recipe ideas from the ingredients at hand, and recipes scaled to a number of servings.",
      whenToUse: [
        "The user asks what they can cook or bake with some ingredients, or wants a recipe.",
        "The user wants a recipe scaled up or down for more or fewer servings."
      ],
      whenNotToUse: ["Calories and protein of a food: use nutrition."],
      examples: [
        {
          user: "What can I cook with chickpeas and onion?",
          tool: "find_recipes",
          args: { ingredients: ["chickpeas", "onion"] }
        },
        {
          user: "Scale the pancake recipe R-3 to 6 servings.",
          tool: "scale_recipe",
          args: { id: "R-3", servings: 6 }
        }
      ],
      tags: ["recipes", "cooking", "ingredients", "meals"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "find_recipes",
        description: "Recipes using the most of the given ingredients.",
        input: Schema.Struct({ ingredients: Schema.Array(text("Ingredient", 60)).pipe(Schema.minItems(1)) }),
        handler: ({ ingredients }) => {
          const wanted = ingredients.map((i) => i.toLowerCase())
          const scored = RECIPES.map((r) => ({
            id: r.id,
            name: r.name,
            minutes: r.minutes,
            matches: r.ingredients.filter((i) => wanted.some((w) => i.item.includes(w))).length
          }))
          return { recipes: scored.filter((r) => r.matches > 0).sort((a, b) => b.matches - a.matches) }
        }
      }),
      defineTool({
        name: "scale_recipe",
        description: "A recipe's ingredient quantities for a number of servings.",
        input: Schema.Struct({
          id: text("Recipe id, e.g. R-1", 10),
          servings: intBetween(1, 50, "Servings")
        }),
        handler: ({ id, servings }) => {
          const r = lookup(RECIPES, "id", id, "recipe")
          const k = servings / r.servings
          return {
            name: r.name,
            servings,
            ingredients: r.ingredients.map((i) => ({ item: i.item, grams: round(i.grams * k, 0) }))
          }
        }
      })
    ]
  })

/** Per 100 g. */
const FOODS = [
  { food: "banana", kcal: 89, proteinG: 1.1, carbsG: 22.8, fatG: 0.3 },
  { food: "oats", kcal: 389, proteinG: 16.9, carbsG: 66.3, fatG: 6.9 },
  { food: "egg", kcal: 143, proteinG: 12.6, carbsG: 0.7, fatG: 9.5 },
  { food: "chicken breast", kcal: 165, proteinG: 31, carbsG: 0, fatG: 3.6 },
  { food: "rice", kcal: 130, proteinG: 2.7, carbsG: 28, fatG: 0.3 }
] as const

const Portion = Schema.Struct({ food: text("Food", 60), grams: between(1, 5000, "Grams") })

const nutrition = () => {
  const facts = (food: string, grams: number) => {
    const f = lookup(FOODS, "food", food, "food")
    const k = grams / 100
    return {
      food: f.food,
      grams,
      kcal: round(f.kcal * k, 0),
      proteinG: round(f.proteinG * k, 1),
      carbsG: round(f.carbsG * k, 1),
      fatG: round(f.fatG * k, 1)
    }
  }
  return definePlugin({
    name: "nutrition",
    manifest: {
      title: "Nutrition Facts",
      summary:
        "Calories, protein, carbs and fat of foods by weight, and totals for a meal. Not dietary advice.",
      whenToUse: [
        "The user asks how many calories or how much protein, carbs or fat a food has.",
        "The user wants the calorie and macro totals of a meal or a day's food."
      ],
      whenNotToUse: ["How to cook something: use recipes."],
      examples: [
        {
          user: "How many calories are in 150 g of chicken breast?",
          tool: "nutrition_facts",
          args: { food: "chicken breast", grams: 150 }
        },
        {
          user: "Total protein and calories for a banana and 80 g of oats?",
          tool: "meal_totals",
          args: {
            items: [
              { food: "banana", grams: 120 },
              { food: "oats", grams: 80 }
            ]
          }
        }
      ],
      tags: ["nutrition", "calories", "protein", "macros"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "nutrition_facts",
        description: "Calories and macronutrients of a portion.",
        input: Portion,
        handler: ({ food, grams }) => facts(food, grams)
      }),
      defineTool({
        name: "meal_totals",
        description: "Summed calories and macronutrients of several portions.",
        input: Schema.Struct({ items: Schema.Array(Portion).pipe(Schema.minItems(1), Schema.maxItems(30)) }),
        handler: ({ items }) => {
          const rows = items.map((i) => facts(i.food, i.grams))
          const sum = (k: "kcal" | "proteinG" | "carbsG" | "fatG") =>
            round(
              rows.reduce((s, r) => s + r[k], 0),
              1
            )
          return {
            items: rows,
            total: { kcal: sum("kcal"), proteinG: sum("proteinG"), carbsG: sum("carbsG"), fatG: sum("fatG") }
          }
        }
      })
    ]
  })
}

interface Workout {
  readonly id: string
  readonly date: string
  readonly activity: string
  readonly minutes: number
  readonly distanceKm?: number | undefined
}

const fitnessLog = ({ store }: ExampleContext) =>
  definePlugin({
    name: "fitness-log",
    manifest: {
      title: "Fitness Log",
      summary: "Logs workouts (runs, rides, gym sessions) and sums training minutes and distance.",
      whenToUse: [
        "The user wants to log a workout, run, bike ride or gym session.",
        "The user asks for their exercise totals: workouts, training minutes or kilometres."
      ],
      examples: [
        {
          user: "Log a 5 km run of 28 minutes on 2025-06-01.",
          tool: "log_workout",
          args: { date: "2025-06-01", activity: "run", minutes: 28, distanceKm: 5 }
        },
        { user: "What are my exercise totals so far?", tool: "workout_summary", args: {} }
      ],
      tags: ["fitness", "workout", "exercise", "running", "training"],
      category: "memory",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "log_workout",
        description: "Record a workout for this user.",
        input: Schema.Struct({
          date: isoDate("Day of the workout"),
          activity: Schema.Literal("run", "ride", "swim", "gym", "walk", "yoga"),
          minutes: intBetween(1, 1440, "Duration in minutes"),
          distanceKm: Schema.optional(between(0, 1000, "Distance in km"))
        }),
        handler: (input, ctx) => ({
          logged: store.add<Workout>(ExampleStore.forUser("workouts", ctx.user.did), {
            id: store.nextId("W"),
            ...input
          })
        })
      }),
      defineTool({
        name: "workout_summary",
        description: "Totals per activity of this user's logged workouts.",
        input: Schema.Struct({}),
        handler: (_input, ctx) => {
          const workouts = store.list<Workout>(ExampleStore.forUser("workouts", ctx.user.did))
          const byActivity: Record<string, { sessions: number; minutes: number; km: number }> = {}
          for (const w of workouts) {
            const a = byActivity[w.activity] ?? { sessions: 0, minutes: 0, km: 0 }
            byActivity[w.activity] = a
            a.sessions += 1
            a.minutes += w.minutes
            a.km = round(a.km + (w.distanceKm ?? 0), 2)
          }
          return { workouts: workouts.length, byActivity }
        }
      })
    ]
  })

interface Reminder {
  readonly id: string
  readonly medication: string
  readonly times: ReadonlyArray<string>
  readonly note?: string | undefined
}

const NO_ADVICE = "Reminders only: this is not medical advice; dosage questions go to a doctor or pharmacist."

const medicationReminders = ({ store }: ExampleContext) =>
  definePlugin({
    name: "medication-reminders",
    manifest: {
      title: "Medication Reminders",
      summary: "Keeps the user's pill and medication reminder times. Reminders only, never medical advice.",
      whenToUse: [
        "The user wants to be reminded to take a pill or medication at set times.",
        "The user asks which medication reminders they have set."
      ],
      whenNotToUse: ["Questions about dosage, side effects or interactions: tell the user to ask a doctor."],
      examples: [
        {
          user: "Remind me to take my vitamin D pill at 08:00.",
          tool: "add_medication_reminder",
          args: { medication: "vitamin D", times: ["08:00"] }
        },
        { user: "Which medication reminders do I have?", tool: "list_medication_reminders", args: {} }
      ],
      tags: ["medication", "pills", "reminders", "health"],
      category: "automation",
      stability: "beta"
    },
    tools: [
      defineTool({
        name: "add_medication_reminder",
        description: "Add a daily reminder to take a medication at given times.",
        input: Schema.Struct({
          medication: text("Medication name as the user calls it", 100),
          times: Schema.Array(Schema.String.pipe(Schema.pattern(/^([01]\d|2[0-3]):[0-5]\d$/))).pipe(
            Schema.minItems(1),
            Schema.maxItems(8)
          ),
          note: Schema.optional(text("The user's own note, e.g. 'with food'", 200))
        }),
        handler: (input, ctx) => {
          const reminder: Reminder = { id: store.nextId("med"), ...input }
          return {
            added: store.add(ExampleStore.forUser("medication", ctx.user.did), reminder),
            notice: NO_ADVICE
          }
        }
      }),
      defineTool({
        name: "list_medication_reminders",
        description: "This user's medication reminders, by time of day.",
        input: Schema.Struct({}),
        handler: (_input, ctx) => {
          const all = store.list<Reminder>(ExampleStore.forUser("medication", ctx.user.did))
          const schedule = all
            .flatMap((r) => r.times.map((t) => ({ time: t, medication: r.medication, note: r.note })))
            .sort((a, b) => a.time.localeCompare(b.time))
          return { reminders: all, schedule, notice: NO_ADVICE }
        }
      })
    ]
  })

const PLANTS = [
  { plant: "monstera", light: "bright indirect", waterEveryDays: 7, toxicToPets: true },
  { plant: "snake plant", light: "low to bright", waterEveryDays: 14, toxicToPets: true },
  { plant: "basil", light: "full sun", waterEveryDays: 2, toxicToPets: false },
  { plant: "fiddle leaf fig", light: "bright indirect", waterEveryDays: 7, toxicToPets: true }
] as const

const plantCare = () =>
  definePlugin({
    name: "plant-care",
    manifest: {
      title: "Plant Care",
      summary: "Houseplant care: light and watering needs, and a watering schedule for your plants.",
      whenToUse: [
        "The user asks how often to water a houseplant or how much light it needs.",
        "The user wants a watering schedule for their indoor plants."
      ],
      examples: [
        {
          user: "How often should I water my monstera plant?",
          tool: "plant_guide",
          args: { plant: "monstera" }
        },
        {
          user: "Make a plant watering schedule for basil and snake plant from 2025-06-01.",
          tool: "watering_schedule",
          args: { plants: ["basil", "snake plant"], start: "2025-06-01", days: 14 }
        }
      ],
      tags: ["plants", "houseplants", "watering", "gardening"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "plant_guide",
        description: "Light, watering interval and pet toxicity of a plant.",
        input: Schema.Struct({ plant: text("Plant name", 60) }),
        handler: ({ plant }) => lookup(PLANTS, "plant", plant, "plant")
      }),
      defineTool({
        name: "watering_schedule",
        description: "Watering days of each plant over a period, day 0 = start.",
        input: Schema.Struct({
          plants: Schema.Array(text("Plant name", 60)).pipe(Schema.minItems(1)),
          start: isoDate("First day"),
          days: intBetween(1, 90, "Days to plan")
        }),
        handler: ({ plants, start, days }) => ({
          start,
          schedule: plants.map((p) => {
            const row = lookup(PLANTS, "plant", p, "plant")
            const offsets = Array.from(
              { length: Math.ceil(days / row.waterEveryDays) },
              (_, i) => i * row.waterEveryDays
            )
            return {
              plant: row.plant,
              dates: offsets.map((o) =>
                new Date(Date.parse(`${start}T00:00:00Z`) + o * 86_400_000).toISOString().slice(0, 10)
              )
            }
          })
        })
      })
    ]
  })

const PETS = [
  {
    species: "dog",
    mealsPerDay: 2,
    gramsPerKgPerDay: 25,
    walkMinutesPerDay: 60,
    note: "Chocolate and grapes are toxic."
  },
  {
    species: "cat",
    mealsPerDay: 3,
    gramsPerKgPerDay: 15,
    walkMinutesPerDay: 0,
    note: "Lilies are toxic to cats."
  },
  {
    species: "rabbit",
    mealsPerDay: 2,
    gramsPerKgPerDay: 30,
    walkMinutesPerDay: 0,
    note: "Unlimited hay; few treats."
  }
] as const

const petCare = () =>
  definePlugin({
    name: "pet-care",
    manifest: {
      title: "Pet Care",
      summary:
        "General care of dogs, cats and rabbits: feeding amounts, walks, foods to avoid. Not vet advice.",
      whenToUse: [
        "The user asks how much or how often to feed their dog, cat or rabbit.",
        "The user asks about general pet care: walks, foods that are toxic to pets."
      ],
      whenNotToUse: ["A sick or injured animal: tell the user to call a vet."],
      examples: [
        {
          user: "How much should I feed my 12 kg dog per day?",
          tool: "feeding_guide",
          args: { species: "dog", weightKg: 12 }
        },
        { user: "What foods are toxic to my cat?", tool: "pet_care_guide", args: { species: "cat" } }
      ],
      tags: ["pets", "dog", "cat", "feeding"],
      category: "data",
      stability: "stable"
    },
    tools: [
      defineTool({
        name: "pet_care_guide",
        description: "Meals per day, daily walk and foods to avoid for a species.",
        input: Schema.Struct({ species: Schema.Literal("dog", "cat", "rabbit") }),
        handler: ({ species }) => lookup(PETS, "species", species, "species")
      }),
      defineTool({
        name: "feeding_guide",
        description: "Daily dry food amount for a pet by weight, split into meals.",
        input: Schema.Struct({
          species: Schema.Literal("dog", "cat", "rabbit"),
          weightKg: between(0.2, 100, "Weight in kg")
        }),
        handler: ({ species, weightKg }) => {
          const p = lookup(PETS, "species", species, "species")
          const daily = round(p.gramsPerKgPerDay * weightKg, 0)
          return {
            species,
            weightKg,
            gramsPerDay: daily,
            meals: p.mealsPerDay,
            gramsPerMeal: round(daily / p.mealsPerDay, 0)
          }
        }
      })
    ]
  })

/** Everyday-life plugins. */
export const lifePlugins = (ctx: ExampleContext): ReadonlyArray<Plugin> => [
  recipes(),
  nutrition(),
  fitnessLog(ctx),
  medicationReminders(ctx),
  plantCare(),
  petCare()
]
