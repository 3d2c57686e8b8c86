/**
 * A LangChain chat model served as an OpenAI-compatible chat completions endpoint on loopback, so
 * that any agent framework that speaks the OpenAI wire (the `openai` SDK, the AI SDK's
 * `@ai-sdk/openai-compatible`, LangChain's `ChatOpenAI`, the OpenAI Agents SDK) can be driven by
 * the offline `ScriptedChatModel` (its router, or a script) in tests and demos: no key, no
 * network. Each request's tools are bound to the model for that call, so the router routes on the
 * tools the client offers (docs/scripted-model-openai-wire.md).
 *
 * A test and demo adapter, not a gateway: no authentication (it listens on 127.0.0.1 only), no
 * rate limits, one choice per request. Plain `node:http`, with OpenAI's error format for every
 * refusal.
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import type { AIMessage, AIMessageChunk, BaseMessage } from "@langchain/core/messages"
import type { Runnable } from "@langchain/core/runnables"
import { describe } from "@plugboard/core"
import { Either } from "effect"
import { OpenAiWireError } from "./internal/openAiWire/error.js"
import {
  describeAnswer,
  modelFailure,
  readBody,
  sendError,
  sendJson,
  stream
} from "./internal/openAiWire/http.js"
import { type ChatRequest, parseChatRequest } from "./internal/openAiWire/request.js"
import { completion, type Envelope } from "./internal/openAiWire/response.js"

export { OpenAiWireError, type OpenAiWireErrorReason } from "./internal/openAiWire/error.js"

/** Options of `serveOpenAiWire`. */
export interface OpenAiWireOptions {
  /** The port on 127.0.0.1; default 0 (any free port: read it from the result's `url`). */
  readonly port?: number | undefined
  /**
   * The model id `GET /v1/models` lists and every answer names; default the model's own name
   * (`ScriptedChatModel.model`: `scripted-router` or `scripted`). A request may name any model.
   */
  readonly modelId?: string | undefined
  /** The largest request body accepted, in bytes; default 4 MiB (a larger one is a 413). */
  readonly maxBodyBytes?: number | undefined
  /** Called with one line per answered request (method, path, status, what was answered, time). */
  readonly log?: ((line: string) => void) | undefined
}

/** A running OpenAI wire server. */
export interface OpenAiWireServer {
  /** The base URL clients take (`baseURL`): `http://127.0.0.1:<port>/v1`. */
  readonly url: string
  readonly port: number
  /** The model id it serves. */
  readonly modelId: string
  /** Stops listening and cuts open connections (a stream in progress ends). Idempotent. */
  readonly close: () => Promise<void>
}

const DEFAULT_MAX_BODY = 4 * 1024 * 1024

const ROUTES: ReadonlyArray<{
  readonly path: RegExp
  readonly method: "GET" | "POST"
  readonly name: Route
}> = [
  { path: /^(\/v1)?\/chat\/completions\/?$/, method: "POST", name: "completions" },
  { path: /^(\/v1)?\/models\/?$/, method: "GET", name: "models" },
  { path: /^(\/v1)?\/models\/[^/]+$/, method: "GET", name: "model" }
]
type Route = "completions" | "models" | "model"
const modelIdOf = (model: BaseChatModel): string => {
  const name = (model as { model?: unknown }).model
  return typeof name === "string" && name !== "" ? name : model._llmType()
}

/** The model with the request's tools bound, as `tool_choice` asks. */
const bindRequestTools = (
  model: BaseChatModel,
  request: ChatRequest
): Either.Either<Runnable<Array<BaseMessage>, AIMessageChunk> | BaseChatModel, OpenAiWireError> => {
  const choice = request.toolChoice
  // "none": the model may not call tools; the scripted model is simply offered none.
  if (request.tools.length === 0 || choice === "none") return Either.right(model)
  if (typeof model.bindTools !== "function")
    return Either.left(
      new OpenAiWireError({
        reason: "invalid-request",
        status: 400,
        param: "tools",
        message: `The served model '${model._llmType()}' cannot take tools.`
      })
    )
  // A named tool is offered alone; `required` and the name are passed on for a model that
  // enforces them (a provider's model; the scripted one does not).
  const tools =
    typeof choice === "object" ? request.tools.filter((t) => t.function.name === choice.name) : request.tools
  const kwargs =
    choice === "auto" ? undefined : { tool_choice: typeof choice === "object" ? choice.name : choice }
  return Either.right(
    model.bindTools([...tools], kwargs as never) as Runnable<Array<BaseMessage>, AIMessageChunk>
  )
}

/**
 * Serves `model` (a `ScriptedChatModel`, or any LangChain chat model) as an OpenAI-compatible
 * chat completions endpoint on 127.0.0.1: `POST /v1/chat/completions` (also
 * `/chat/completions`), streamed or not, with function tools; `GET /v1/models`. Resolves once
 * listening; rejects with an `OpenAiWireError` of reason `listen` (its `code` the system's, e.g.
 * `EADDRINUSE`) when it cannot. A `RangeError` for a port or body limit out of range.
 */
export const serveOpenAiWire = async (
  model: BaseChatModel,
  options: OpenAiWireOptions = {}
): Promise<OpenAiWireServer> => {
  const port = options.port ?? 0
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new RangeError(`serveOpenAiWire: port must be a whole number from 0 to 65535, got ${port}.`)
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY
  if (!Number.isInteger(maxBody) || maxBody <= 0)
    throw new RangeError(`serveOpenAiWire: maxBodyBytes must be a positive whole number, got ${maxBody}.`)
  const modelId = options.modelId ?? modelIdOf(model)
  const created = Math.floor(Date.now() / 1000)
  const modelEntry = { id: modelId, object: "model", created, owned_by: "plugboard" }

  const completions = async (req: IncomingMessage, res: ServerResponse): Promise<string> => {
    const body = await readBody(req, maxBody)
    if (Either.isLeft(body)) {
      // The rest of the body is discarded unbuffered; the connection ends with the answer.
      sendError(res, body.left, { connection: "close" })
      return body.left.reason
    }
    let json: unknown
    try {
      json = JSON.parse(body.right)
    } catch (error) {
      const e = new OpenAiWireError({
        reason: "malformed-json",
        status: 400,
        code: "invalid_json",
        message: `The body is not valid JSON: ${describe(error)}`
      })
      sendError(res, e)
      return e.reason
    }
    const request = parseChatRequest(json)
    if (Either.isLeft(request)) {
      sendError(res, request.left)
      return request.left.reason
    }
    const runnable = bindRequestTools(model, request.right)
    if (Either.isLeft(runnable)) {
      sendError(res, runnable.left)
      return runnable.left.reason
    }
    // A client that goes away aborts the model's call.
    const abort = new AbortController()
    res.on("close", () => abort.abort())
    const envelope: Envelope = {
      id: `chatcmpl-${randomUUID()}`,
      created: Math.floor(Date.now() / 1000),
      model: modelId
    }
    const messages = [...request.right.messages]
    if (!request.right.stream) {
      let reply: AIMessage
      try {
        reply = (await runnable.right.invoke(messages, { signal: abort.signal })) as AIMessage
      } catch (error) {
        const e = modelFailure(error)
        sendError(res, e)
        return e.reason
      }
      sendJson(res, 200, completion(envelope, reply))
      return describeAnswer((reply.tool_calls ?? []).map((c) => c.name))
    }
    return stream(res, runnable.right, messages, envelope, request.right.includeUsage, abort.signal)
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<string> => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname
    const matching = ROUTES.filter((r) => r.path.test(path))
    const route = matching.find((r) => r.method === req.method)
    if (route === undefined) {
      req.resume()
      const e =
        matching.length > 0
          ? new OpenAiWireError({
              reason: "method-not-allowed",
              status: 405,
              message: `${req.method} is not allowed on ${path}; use ${matching.map((r) => r.method).join(", ")}.`
            })
          : new OpenAiWireError({
              reason: "not-found",
              status: 404,
              code: "unknown_url",
              message: `Invalid URL (${req.method} ${path}): this server serves POST /v1/chat/completions and GET /v1/models.`
            })
      sendError(
        res,
        e,
        e.reason === "method-not-allowed" ? { allow: matching.map((r) => r.method).join(", ") } : {}
      )
      return e.reason
    }
    switch (route.name) {
      case "models":
        req.resume()
        sendJson(res, 200, { object: "list", data: [modelEntry] })
        return "ok"
      case "model": {
        req.resume()
        const id = decodeURIComponent(path.slice(path.lastIndexOf("/") + 1))
        if (id === modelId) {
          sendJson(res, 200, modelEntry)
          return "ok"
        }
        const e = new OpenAiWireError({
          reason: "not-found",
          status: 404,
          code: "model_not_found",
          param: "model",
          message: `The model '${id}' does not exist; this server serves '${modelId}'.`
        })
        sendError(res, e)
        return e.reason
      }
      case "completions":
        return completions(req, res)
    }
  }

  const server: Server = createServer((req, res) => {
    const started = performance.now()
    handle(req, res).then(
      (what) =>
        options.log?.(
          `${req.method} ${req.url} ${res.statusCode} ${what} ${Math.round(performance.now() - started)} ms`
        ),
      (error: unknown) => {
        // A bug of this server, not of the request: answered, never left hanging.
        if (!res.headersSent)
          sendError(
            res,
            new OpenAiWireError({
              reason: "model-failed",
              status: 500,
              message: `Internal error: ${describe(error)}`
            })
          )
        else res.destroy()
        options.log?.(`${req.method} ${req.url} failed: ${describe(error)}`)
      }
    )
  })

  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) =>
      reject(
        new OpenAiWireError({
          reason: "listen",
          status: 0,
          code: error.code,
          message: `Cannot listen on 127.0.0.1:${port}: ${error.message}`
        })
      )
    server.once("error", failed)
    server.listen(port, "127.0.0.1", () => {
      server.off("error", failed)
      resolve()
    })
  })
  const address = server.address()
  const bound = typeof address === "object" && address !== null ? address.port : port
  let closed: Promise<void> | undefined
  return {
    url: `http://127.0.0.1:${bound}/v1`,
    port: bound,
    modelId,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closed
    }
  }
}
