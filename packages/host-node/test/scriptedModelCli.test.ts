/**
 * `plugboard scripted-model` as the README runs it, a real process: it prints where it listens,
 * answers OpenAI chat completions there (the router over the examples' catalog, the router with
 * no catalog, or a script file), logs each request, and stops cleanly on SIGTERM. Bad command
 * lines and bad script files are usage errors that say what is wrong. The wire itself is tested
 * with real clients in `@plugboard/models` (OpenAiWire.*.test.ts).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { CliIO } from "../src/cli/Commands.js"
import { scriptedModel } from "../src/cli/ScriptedModel.js"
import { UsageError } from "../src/cli/UsageError.js"
import { ROOT, runCli } from "./runCli.js"

const cwd = mkdtempSync(join(tmpdir(), "plugboard-scripted-model-"))
const running = new Set<ChildProcess>()
afterAll(() => {
  for (const child of running) child.kill("SIGKILL")
  rmSync(cwd, { recursive: true, force: true })
})

/** A started `scripted-model`: its URL once it printed it, its output so far, and its stop. */
const start = async (...args: ReadonlyArray<string>) => {
  const child = spawn(
    process.execPath,
    [
      "--conditions=@plugboard/source",
      join(ROOT, "scripts/plugboard.mjs"),
      "scripted-model",
      "--port",
      "0",
      ...args
    ],
    { cwd, env: { PATH: process.env.PATH ?? "", HOME: cwd } }
  )
  running.add(child)
  let stdout = ""
  let stderr = ""
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString()
  })
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)))
  // Resolves on the banner's first line, or fails with what the process said when it exits first.
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString()
      const found = /on (http:\/\/127\.0\.0\.1:\d+\/v1) /.exec(stdout)
      if (found !== null) resolve(found[1]!)
    })
    void exited.then((code) => reject(new Error(`exited ${code} before listening: ${stdout}${stderr}`)))
  })
  return {
    url,
    output: () => stdout,
    stop: async () => {
      child.kill("SIGTERM")
      const code = await exited
      running.delete(child)
      return { code, stdout, stderr }
    }
  }
}

/** The fields of a chat completion (or of an error) these tests read. */
interface Answer {
  readonly choices: Array<{
    readonly finish_reason: string
    readonly message: {
      readonly content: string | null
      readonly reasoning_content?: string
      readonly tool_calls: Array<{ readonly function: { readonly name: string; readonly arguments: string } }>
    }
  }>
  readonly error?: { readonly code: string; readonly type: string }
}

const complete = async (url: string, body: Record<string, unknown>) => {
  const response = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "any", ...body })
  })
  return { status: response.status, body: (await response.json()) as Answer }
}

const META = ["list_capabilities", "load_capability"].map((name) => ({
  type: "function",
  function: { name }
}))

describe("plugboard scripted-model", () => {
  it("serves the router over the examples' catalog: a weather question loads the weather plugin", async () => {
    const server = await start()
    expect(server.output()).toMatch(/routes {3}over 55 plugins from .*examples\/catalog\/index\.ts/)
    const models = (await (await fetch(`${server.url}/models`)).json()) as { data: Array<{ id: string }> }
    expect(models.data.map((m) => m.id)).toEqual(["scripted-router"])
    const { status, body } = await complete(server.url, {
      messages: [{ role: "user", content: "What's the weather in Berlin?" }],
      tools: META
    })
    expect(status).toBe(200)
    expect(body.choices[0]!.finish_reason).toBe("tool_calls")
    expect(body.choices[0]!.message.tool_calls[0]!.function).toEqual({
      name: "load_capability",
      arguments: JSON.stringify({ names: ["weather"] })
    })
    const { code, stdout, stderr } = await server.stop()
    expect(code).toBe(0)
    expect(stdout).toMatch(/POST \/v1\/chat\/completions 200 tool_calls load_capability \d+ ms\n/)
    expect(stdout.endsWith("stopped.\n")).toBe(true)
    expect(stderr).toBe("\nSIGTERM: stopping.\n")
  }, 60_000)

  it("--no-catalog discovers first; --script replays a file, then answers 500 script_exhausted", async () => {
    const bare = await start("--no-catalog")
    const discovery = await complete(bare.url, {
      messages: [{ role: "user", content: "What's the weather in Berlin?" }],
      tools: META
    })
    expect(discovery.body.choices[0]!.message.tool_calls[0]!.function.name).toBe("list_capabilities")
    expect((await bare.stop()).code).toBe(0)

    const file = join(cwd, "script.json")
    writeFileSync(
      file,
      JSON.stringify([
        { tool: "lookup", args: { id: 1 } },
        { reasoning: "Got it.", reply: "Done." }
      ])
    )
    const scripted = await start("--script", "script.json")
    expect(scripted.output()).toContain("model    scripted\n")
    const first = await complete(scripted.url, { messages: [{ role: "user", content: "go" }] })
    expect(first.body.choices[0]!.message.tool_calls[0]!.function).toEqual({
      name: "lookup",
      arguments: '{"id":1}'
    })
    const second = await complete(scripted.url, { messages: [{ role: "user", content: "go" }] })
    expect(second.body.choices[0]!.message).toMatchObject({ content: "Done.", reasoning_content: "Got it." })
    const third = await complete(scripted.url, { messages: [{ role: "user", content: "go" }] })
    expect(third).toMatchObject({
      status: 500,
      body: { error: { code: "script_exhausted", type: "server_error" } }
    })
    expect((await scripted.stop()).code).toBe(0)
  }, 60_000)

  it("refuses bad command lines and script files with a usage error", async () => {
    writeFileSync(join(cwd, "bad.json"), JSON.stringify(["ok", { tool: 3 }]))
    writeFileSync(join(cwd, "notjson.json"), "[")
    const io: CliIO = { out: () => undefined, err: () => undefined, env: {}, cwd }
    const cases: Array<[ReadonlyArray<string>, RegExp]> = [
      [["--port", "x"], /^--port must be a whole number from 0 to 65535, got "x"\.$/],
      [["--script", "bad.json", "examples"], /^--script replays its steps: it takes no module/],
      [["--no-catalog=yes"], /^Option --no-catalog takes no value\.$/],
      [["--script", "bad.json"], /^The script bad\.json is not a list of steps at \[1\]/],
      [["--script", "notjson.json"], /^Cannot read the script notjson\.json: /],
      [["--script", "absent.json"], /^Cannot read the script absent\.json: /]
    ]
    for (const [args, message] of cases) {
      const refused = await scriptedModel(args, io).then(
        () => undefined,
        (error: unknown) => error
      )
      expect(refused).toBeInstanceOf(UsageError)
      expect((refused as UsageError).message).toMatch(message)
    }
    // The command line as the CLI reports it: the message, where to read more, exit code 2.
    const { code, stdout, stderr } = await runCli(cwd, "scripted-model", "--bogus")
    expect({ code, stdout, stderr }).toEqual({
      code: 2,
      stdout: "",
      stderr: "Unknown option --bogus. Run 'plugboard scripted-model --help' for its options.\n"
    })
  }, 60_000)
})
