/**
 * The body of `pnpm bench conversation` (bench/conversation.bench.ts): what a turn costs as a
 * conversation grows, for plugboard's SQLite saver and for LangChain's `SqliteSaver`
 * (`@langchain/langgraph-checkpoint-sqlite`), in the same run, on the same agent.
 *
 * One session, 300 sequential turns, each a whole request as the host runs it: `createMainAgent`
 * (the graph compiled against the saver) and `runTurn` with its default durability (one
 * checkpoint at the end of the turn). Each turn adds four messages: the user's question, the
 * model's tool call, the tool's result and the answer (a zero-latency scripted model, so what is
 * measured is the agent and its storage). plugboard runs with the embedded defaults (WAL,
 * `synchronous=NORMAL`, retention of 100 checkpoints); on it the messages are stored as deltas
 * (`agentStateFor`). LangChain's saver, which reads delta history only by the base class's walk,
 * gets the full-copy state, as it would in any LangGraph app. The two alternate turn by turn so
 * that machine load falls on both alike.
 *
 * Reported at turns 10, 100 and 300: the median wall time and the mean CPU time of the ten turns
 * ending there, the median time the turn spent reading and writing its thread (the saver's part,
 * `TurnSaver.timings`; the rest is the agent and the model reading the history), and the bytes the database gained per turn over those ten turns (the sum of the
 * lengths of every stored value, so page slack and free pages do not blur it), then each file's
 * size at the end. Targets: turn 300 at most 1.5× turn 10 (wall and CPU); bytes per turn constant
 * within 20%. Twenty turns on another session warm the process up first.
 *
 * History pages, at the same marks on plugboard's saver (docs/benchmarks.md, history pages): a
 * page of the newest 20 turns as `GET /sessions/:id/messages?limit=20` reads it (`getTuple`, then
 * the page), read item by item (`pageAt`, decoding only the page) and cut from the whole list
 * (`messagesAt` + `HistoryPage.page`, as before), each on the saver the turns ran on (its caches
 * warm) and on a saver opened afresh on the same file (nothing cached, as on another host or once
 * the thread left the cache). Target: turn 300 at most 1.5× turn 10, item by item.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { SqliteSaver as ReferenceSaver } from "@langchain/langgraph-checkpoint-sqlite"
import { Catalog, HistoryPage } from "@plugboard/core"
import {
  createMainAgent,
  messagesAt,
  messageView,
  pageAt,
  prepareCatalog,
  runTurn
} from "@plugboard/langgraph"
import { ScriptedChatModel } from "@plugboard/models"
import { makeSqliteSaver } from "@plugboard/sqlite"
import BetterSqlite3 from "better-sqlite3"
import { longForecastPlugin, lorem } from "../forecast.js"

const TURNS = 300
const MARKS = [10, 100, 300] as const
const WINDOW = 10
const WARMUP = 20

const weather = longForecastPlugin

/** The sum of the lengths of every value stored in every table (what the database holds). */
const storedBytes = (file: string): number => {
  const db = new BetterSqlite3(file, { readonly: true })
  try {
    let total = 0
    const tables = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all() as Array<{ name: string }>
    for (const { name } of tables) {
      const columns = db.prepare(`SELECT name FROM pragma_table_info(?)`).all(name) as Array<{ name: string }>
      if (columns.length === 0) continue
      const sum = columns.map((c) => `coalesce(sum(length("${c.name}")), 0)`).join(" + ")
      total += (db.prepare(`SELECT ${sum} AS n FROM "${name}"`).get() as { n: number }).n
    }
    return total
  } finally {
    db.close()
  }
}

const fileBytes = (file: string): number => {
  let n = 0
  for (const f of [file, `${file}-wal`]) {
    try {
      n += statSync(f).size
    } catch {
      // no WAL
    }
  }
  return n
}

interface Contender {
  readonly name: string
  readonly file: string
  readonly saver: BaseCheckpointSaver
  readonly close: () => void
  readonly wall: Array<number>
  readonly cpu: Array<number>
  /** Wall time of the turn's reads and writes of its thread (`TurnSaver.timings`: load + save). */
  readonly storage: Array<number>
  readonly bytes: Map<number, number>
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Turns per history page, the client SDK's default. */
const PAGE_TURNS = 20
/** Reads per history-page figure (the median is reported). */
const PAGE_SAMPLES = 15

/** Median milliseconds of a history page's read, per way of reading it, at one mark. */
interface PageFigures {
  readonly itemsWarm: number
  readonly itemsFresh: number
  readonly wholeWarm: number
  readonly wholeFresh: number
}

/**
 * The history page of the newest `PAGE_TURNS` turns, as the route reads it: the latest
 * checkpoint, then the page item by item or cut from the whole list. Checks the page's size.
 */
const readPage = async (saver: BaseCheckpointSaver, byItems: boolean, turn: number): Promise<number> => {
  const t0 = performance.now()
  const tuple = await saver.getTuple({ configurable: { thread_id: "conversation" } })
  const request = { limit: PAGE_TURNS }
  const page = byItems
    ? await pageAt(saver, tuple, request)
    : HistoryPage.page(await messagesAt(saver, tuple), messageView, request)
  const elapsed = performance.now() - t0
  const shown = page._tag === "Right" ? page.right.messages.length : -1
  if (shown !== Math.min(turn, PAGE_TURNS) * 4)
    throw new Error(`history page at turn ${turn}: ${shown} messages`)
  return elapsed
}

const measurePages = async (saver: BaseCheckpointSaver, file: string, turn: number): Promise<PageFigures> => {
  const warm = async (byItems: boolean) => {
    const times: Array<number> = []
    for (let i = 0; i < PAGE_SAMPLES; i++) times.push(await readPage(saver, byItems, turn))
    return median(times)
  }
  const fresh = async (byItems: boolean) => {
    const times: Array<number> = []
    for (let i = 0; i < PAGE_SAMPLES; i++) {
      const other = makeSqliteSaver({ filename: file, synchronous: "NORMAL" })
      try {
        times.push(await readPage(other, byItems, turn))
      } finally {
        other.close()
      }
    }
    return median(times)
  }
  return {
    itemsWarm: await warm(true),
    itemsFresh: await fresh(true),
    wholeWarm: await warm(false),
    wholeFresh: await fresh(false)
  }
}

export default async () => {
  const dir = mkdtempSync(join(tmpdir(), "plugboard-bench-conversation-"))
  try {
    const catalog = Catalog.unsafeMake([weather])
    prepareCatalog(catalog)
    const plugboardFile = join(dir, "plugboard.sqlite")
    const plugboard = makeSqliteSaver({
      filename: plugboardFile,
      synchronous: "NORMAL",
      retention: { keepCheckpoints: 100 }
    })
    const referenceFile = join(dir, "reference.sqlite")
    const referenceDb = new BetterSqlite3(referenceFile)
    const reference = new ReferenceSaver(referenceDb)
    await reference.getTuple({ configurable: { thread_id: "warm" } }) // runs its setup (WAL)
    referenceDb.pragma("synchronous = NORMAL")
    const runOne = async (c: Contender, sessionId: string, turn: number) => {
      const agent = await createMainAgent({
        catalog,
        model: ScriptedChatModel.script([
          { tool: "get_forecast", args: { city: `Lisbon ${turn}` } },
          `Turn ${turn}: ${lorem.repeat(3)}`
        ]),
        checkpointer: c.saver,
        basePrompt: "You are a helpful assistant.",
        request: { did: "did:key:bench", sessionId, requestId: `${sessionId}-${turn}` }
      })
      const result = await runTurn(agent, { message: `Question ${turn}: what is the weather in Lisbon?` })
      if (result.state.messages.length !== turn * 4) {
        throw new Error(`${c.name}: ${result.state.messages.length} messages after turn ${turn}`)
      }
      return agent.saver.timings.load + agent.saver.timings.save
    }
    const contenders: Array<Contender> = [
      {
        name: "plugboard",
        file: plugboardFile,
        saver: plugboard,
        close: () => plugboard.close(),
        wall: [],
        cpu: [],
        storage: [],
        bytes: new Map()
      },
      {
        name: "LangChain SqliteSaver",
        file: referenceFile,
        saver: reference,
        close: () => referenceDb.close(),
        wall: [],
        cpu: [],
        storage: [],
        bytes: new Map()
      }
    ]
    // Warm-up on another session, so that turn 10 measures a warm process, not the first turns'
    // compilation (the measured session starts empty all the same).
    for (let turn = 1; turn <= WARMUP; turn++) {
      for (const c of contenders) await runOne(c, "warm-up", turn)
    }
    for (const c of contenders) c.bytes.set(0, storedBytes(c.file))
    const pages = new Map<number, PageFigures>()
    console.log(
      `one session, ${TURNS} sequential turns (createMainAgent + runTurn, 4 messages a turn, scripted model), alternating savers`
    )
    console.log(
      `load average at start: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`
    )
    for (let turn = 1; turn <= TURNS; turn++) {
      const order = turn % 2 === 0 ? contenders : [...contenders].reverse()
      for (const c of order) {
        const c0 = process.cpuUsage()
        const t0 = performance.now()
        c.storage.push(await runOne(c, "conversation", turn))
        c.wall.push(performance.now() - t0)
        const used = process.cpuUsage(c0)
        c.cpu.push((used.user + used.system) / 1000)
        if (MARKS.some((m) => m === turn || m - WINDOW === turn)) c.bytes.set(turn, storedBytes(c.file))
      }
      if (MARKS.some((m) => m === turn)) pages.set(turn, await measurePages(plugboard, plugboardFile, turn))
    }
    console.log(
      "saver                   turn  wall median  CPU mean  storage median  bytes/turn   (over the 10 turns ending there)"
    )
    for (const c of contenders) {
      for (const mark of MARKS) {
        const wall = c.wall.slice(mark - WINDOW, mark)
        const cpu = c.cpu.slice(mark - WINDOW, mark)
        const bytes = (c.bytes.get(mark)! - c.bytes.get(mark - WINDOW)!) / WINDOW
        console.log(
          `${c.name.padEnd(22)} ${String(mark).padStart(5)}  ${median(wall).toFixed(2).padStart(8)} ms ${(cpu.reduce((a, b) => a + b, 0) / cpu.length).toFixed(2).padStart(6)} ms  ${median(
            c.storage.slice(mark - WINDOW, mark)
          )
            .toFixed(2)
            .padStart(8)} ms  ${bytes.toFixed(0).padStart(9)}`
        )
      }
      const w10 = median(c.wall.slice(MARKS[0] - WINDOW, MARKS[0]))
      const w300 = median(c.wall.slice(TURNS - WINDOW, TURNS))
      const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
      const cpuRatio =
        mean(c.cpu.slice(TURNS - WINDOW, TURNS)) / mean(c.cpu.slice(MARKS[0] - WINDOW, MARKS[0]))
      const b = MARKS.map((m) => (c.bytes.get(m)! - c.bytes.get(m - WINDOW)!) / WINDOW)
      const spread = Math.max(...b) / Math.min(...b)
      c.close()
      console.log(
        `${c.name.padEnd(22)} turn 300 / turn 10: ${(w300 / w10).toFixed(2)}× wall, ${cpuRatio.toFixed(2)}× CPU (target ≤ 1.5×: ${Math.max(w300 / w10, cpuRatio) <= 1.5 ? "met" : "missed"}); ` +
          `bytes/turn max/min: ${spread.toFixed(2)} (target ≤ 1.2: ${spread <= 1.2 ? "met" : "missed"}); ` +
          `file ${(fileBytes(c.file) / 1e6).toFixed(1)} MB, stored ${(storedBytes(c.file) / 1e6).toFixed(1)} MB`
      )
    }
    console.log(
      `history page of the newest ${PAGE_TURNS} turns on plugboard's saver (getTuple + the page; median of ${PAGE_SAMPLES} reads; warm = the saver the turns ran on, fresh = a saver opened on the file)`
    )
    console.log(" turn  item by item: warm    fresh   whole list: warm    fresh")
    const ms = (x: number) => `${x.toFixed(2).padStart(8)} ms`
    for (const mark of MARKS) {
      const f = pages.get(mark)!
      console.log(
        `${String(mark).padStart(5)}  ${ms(f.itemsWarm)} ${ms(f.itemsFresh)}    ${ms(f.wholeWarm)} ${ms(f.wholeFresh)}`
      )
    }
    const first = pages.get(MARKS[0])!
    const last = pages.get(TURNS)!
    const ratio = (k: keyof PageFigures) => `${(last[k] / first[k]).toFixed(2)}×`
    console.log(
      `history page turn ${TURNS} / turn ${MARKS[0]}: item by item ${ratio("itemsWarm")} warm, ${ratio("itemsFresh")} fresh (target ≤ 1.5×: ${Math.max(last.itemsWarm / first.itemsWarm, last.itemsFresh / first.itemsFresh) <= 1.5 ? "met" : "missed"}); whole list ${ratio("wholeWarm")} warm, ${ratio("wholeFresh")} fresh`
    )
    console.log(
      `load average at end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
