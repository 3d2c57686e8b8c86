/**
 * Skills whose scripts run, as the server turns them on (`SKILLS_RUN`, docs/skills-that-run.md):
 * off by default, on per skill, and failing closed on a host without a sandbox, with a boot
 * warning naming what to install. The vendored skill-creator (Apache-2.0) runs its own validator
 * in the real bubblewrap, through a server turn, and the model reads its answer.
 */
import { existsSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { ScriptedChatModel, type ScriptedTurn } from "@plugboard/models"
import { findBwrap } from "@plugboard/skills"
import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type SkillsRun, scriptRunning, skillsRunFromEnv } from "../src/SkillsRun.js"
import { collect, newSession, recordingLogger, start, stream, user } from "./helpers.js"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
const SKILLS = join(ROOT, "packages/adapters/skills/test/vendored")
const BWRAP = findBwrap()
/** The venv scripts/skills-venv.sh builds (its PyYAML is what skill-creator's validator imports). */
const PYTHON =
  process.env.SKILLS_RUN_PYTHON ??
  (existsSync(join(ROOT, ".plugboard/skills-venv/bin/python"))
    ? join(ROOT, ".plugboard/skills-venv/bin/python")
    : undefined)
if (process.env.CI === "true" && (BWRAP === undefined || PYTHON === undefined))
  throw new Error("bubblewrap or the skills venv is missing: .ci/run installs both")

const setting = (skills: SkillsRun["skills"]): SkillsRun => ({
  skills,
  bwrap: undefined,
  python: undefined,
  node: undefined,
  hosts: []
})

describe("SKILLS_RUN, read", () => {
  it("is off unset, empty or none; all; or names, trimmed and once each", () => {
    for (const off of [undefined, "", "  ", "none", "NONE"])
      expect(skillsRunFromEnv({ SKILLS_RUN: off }, "/app")).toEqual(Either.right(undefined))
    expect(skillsRunFromEnv({ SKILLS_RUN: "ALL" }, "/app")).toEqual(Either.right(setting("all")))
    expect(skillsRunFromEnv({ SKILLS_RUN: " pdf, xlsx ,pdf," }, "/app")).toEqual(
      Either.right(setting(["pdf", "xlsx"]))
    )
  })

  it("resolves a relative program against the working directory, keeps a bare command name", () => {
    const read = skillsRunFromEnv(
      {
        SKILLS_RUN: "all",
        SKILLS_RUN_PYTHON: "venv/bin/python",
        SKILLS_RUN_NODE: "node",
        SKILLS_RUN_BWRAP: "/opt/bwrap"
      },
      "/app"
    )
    expect(read).toEqual(
      Either.right({
        skills: "all",
        python: "/app/venv/bin/python",
        node: "node",
        bwrap: "/opt/bwrap",
        hosts: []
      })
    )
  })

  it("refuses a name that is not a skill's, quoting it", () => {
    for (const bad of ["PDF", "pdf,../etc", "a b", "x".repeat(65)]) {
      const read = skillsRunFromEnv({ SKILLS_RUN: bad }, "/app")
      expect(Either.isLeft(read), bad).toBe(true)
      expect(Either.isLeft(read) ? read.left : "").toMatch(/^SKILLS_RUN must be "all", "none" or skill names/)
    }
  })

  it("reads SKILLS_RUN_HOSTS as the allowed hosts, trimmed and once each; unset or empty, none", () => {
    for (const off of [undefined, "", " , "])
      expect(skillsRunFromEnv({ SKILLS_RUN: "all", SKILLS_RUN_HOSTS: off }, "/app")).toEqual(
        Either.right(setting("all"))
      )
    const read = skillsRunFromEnv(
      {
        SKILLS_RUN: "all",
        SKILLS_RUN_HOSTS: " pypi.org, *.pythonhosted.org:443 ,10.0.0.7:8080,[::1]:3000,pypi.org"
      },
      "/app"
    )
    expect(read).toEqual(
      Either.right({
        ...setting("all"),
        hosts: ["pypi.org", "*.pythonhosted.org:443", "10.0.0.7:8080", "[::1]:3000"]
      })
    )
  })

  it("refuses a SKILLS_RUN_HOSTS entry that is not a host, quoting it", () => {
    for (const bad of ["https://pypi.org", "pypi.org:0", "*", "a b", "pypi.org,x:99999", "1.2.3", "[::1"]) {
      const read = skillsRunFromEnv({ SKILLS_RUN: "all", SKILLS_RUN_HOSTS: bad }, "/app")
      expect(Either.isLeft(read), bad).toBe(true)
      const quoted = bad.includes(",") ? "x:99999" : bad
      expect(Either.isLeft(read) ? read.left : "").toBe(
        `SKILLS_RUN_HOSTS: ${JSON.stringify(quoted)} is not a host to allow: an entry is host or host:port (a DNS name, an IP address, [IPv6]:port, or *.name for its subdomains; port 1 to 65535).`
      )
    }
  })

  it("reads any list of valid names as that list, in order, without repeats (property)", () => {
    const name = fc
      .stringMatching(/^[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,5})?$/)
      .filter((n) => n !== "all" && n !== "none")
    fc.assert(
      fc.property(
        fc.array(name, { minLength: 1, maxLength: 6 }),
        fc.constantFrom(",", ", ", " , "),
        (names, sep) => {
          expect(skillsRunFromEnv({ SKILLS_RUN: names.join(sep) }, "/app")).toEqual(
            Either.right(setting([...new Set(names)]))
          )
        }
      )
    )
  })
})

describe("SKILLS_RUN on a host without a sandbox: fails closed, saying what to install", () => {
  it("no bwrap on PATH", async () => {
    const running = await scriptRunning(setting("all"), SKILLS, "/nonexistent")
    expect(running).toEqual({
      _tag: "Unavailable",
      reason: "bubblewrap (`bwrap`) is not on PATH: install it (Debian/Ubuntu: apt-get install bubblewrap)"
    })
  })

  it("a SKILLS_RUN_BWRAP that cannot start", async () => {
    const running = await scriptRunning({ ...setting("all"), bwrap: "/nonexistent/bwrap" }, SKILLS)
    expect(running._tag).toBe("Unavailable")
    expect(running._tag === "Unavailable" ? running.reason : "").toMatch(
      /^bubblewrap \(\/nonexistent\/bwrap\) could not be started/
    )
  })

  it("through the server: a boot warning, and the skill keeps read_file only", async () => {
    const { logger, records } = recordingLogger()
    const server = await start({
      plugins: [],
      logger,
      env: { SKILLS_DIR: SKILLS, SKILLS_RUN: "skill-creator", SKILLS_RUN_BWRAP: "/nonexistent/bwrap" }
    })
    try {
      const tools = server.app.catalog.byName.get("skill-creator")?.tools.map((t) => t.name)
      expect(tools).toEqual(["read_file"])
      const warning = records.find((r) => r.level === "warn" && r.message.includes("SKILLS_RUN"))
      expect(warning?.message).toMatch(
        /^\[boot-warning\] SKILLS_RUN is set, but no skill script can run on this host: bubblewrap \(\/nonexistent\/bwrap\) could not be started.*The skills are mounted with read_file only\.$/
      )
    } finally {
      await server.stop()
    }
  })
})

describe.skipIf(BWRAP === undefined || PYTHON === undefined)("SKILLS_RUN through a server turn", () => {
  it("is off by default: a mounted skill has read_file only", async () => {
    const server = await start({ plugins: [], env: { SKILLS_DIR: SKILLS } })
    try {
      expect(server.app.catalog.byName.get("skill-creator")?.tools.map((t) => t.name)).toEqual(["read_file"])
    } finally {
      await server.stop()
    }
  })

  it("passes SKILLS_RUN_HOSTS to the runner: the run_script tool names the hosts it may reach", async () => {
    const running = await scriptRunning(
      { ...setting("all"), hosts: ["pypi.org", "*.pythonhosted.org:443"] },
      SKILLS
    )
    expect(running._tag === "On" ? running.run.runner.allowHosts : undefined).toEqual([
      "pypi.org",
      "*.pythonhosted.org:443"
    ])
    const server = await start({
      plugins: [],
      env: { SKILLS_DIR: SKILLS, SKILLS_RUN: "skill-creator", SKILLS_RUN_HOSTS: "pypi.org" }
    })
    try {
      const tool = server.app.catalog.byName.get("skill-creator")?.tools.find((t) => t.name === "run_script")
      expect(tool?.description).toContain(
        "there is no network but HTTP(S), through the proxy in HTTP_PROXY/HTTPS_PROXY, to: pypi.org."
      )
    } finally {
      await server.stop()
    }
  })

  it("runs the allowed skill's own script in the sandbox; the model reads its answer", async () => {
    const read: Array<string> = []
    const model = ScriptedChatModel.script([
      [{ tool: "load_capability", args: { names: ["skill-creator"] } }],
      [
        {
          tool: "run_script",
          args: {
            script: "scripts/quick_validate.py",
            args: ["my-skill"],
            files: [
              {
                path: "my-skill/SKILL.md",
                text: "---\nname: my-skill\ndescription: Greets people. Use when asked to greet.\n---\n\n# Greet\n"
              }
            ]
          }
        }
      ],
      (t: ScriptedTurn) => {
        read.push(String(t.messages.at(-1)?.content))
        return "It is valid."
      }
    ])
    const server = await start({
      plugins: [],
      model,
      env: {
        SKILLS_DIR: SKILLS,
        SKILLS_RUN: "skill-creator",
        SKILLS_RUN_PYTHON: PYTHON!,
        ...(process.env.SKILLS_RUN_NODE === undefined ? {} : { SKILLS_RUN_NODE: process.env.SKILLS_RUN_NODE })
      }
    })
    try {
      expect(server.app.catalog.byName.get("skill-creator")?.tools.map((t) => t.name)).toEqual([
        "read_file",
        "run_script"
      ])
      const u = await user(server.app.oracleDid)
      const session = await newSession(server.url, u.headers)
      const events = await collect(
        (await stream(server.url, session, u.headers, "Validate my skill.")).events
      )
      expect(events.at(-1)).toMatchObject({ _tag: "done", status: "finished" })
      expect(read).toHaveLength(1)
      expect(read[0]).toContain("exited with code 0")
      expect(read[0]).toContain("Skill is valid!")
    } finally {
      await server.stop()
    }
  })
})
