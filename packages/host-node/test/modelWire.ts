/**
 * The scripted model served over the OpenAI wire, behind a pass-through proxy that records each
 * request body's size: a server under test talks to it with the real `openai-compatible` provider,
 * so what each model call sent is measured in bytes, as a provider would be billed for it.
 */
import { createServer, request as httpRequest } from "node:http"
import type { AddressInfo } from "node:net"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { serveOpenAiWire } from "@plugboard/models"

/** A served model, the env that points a server at it, and the size of every request it got. */
export interface MeasuredWire {
  readonly env: Record<string, string>
  /** Bytes of each POST body, in order. */
  readonly sizes: Array<number>
  readonly close: () => Promise<void>
}

/** Serves `model` and measures what reaches it. */
export const measuredWire = async (model: BaseChatModel): Promise<MeasuredWire> => {
  const wire = await serveOpenAiWire(model, { modelId: "scripted", maxBodyBytes: 64 * 1024 * 1024 })
  const to = new URL(wire.url)
  const sizes: Array<number> = []
  const proxy = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const body = Buffer.concat(chunks)
      if (req.method === "POST") sizes.push(body.length)
      const upstream = httpRequest(
        { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        }
      )
      upstream.on("error", () => res.destroy())
      upstream.end(body)
    })
  })
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r))
  const port = (proxy.address() as AddressInfo).port
  return {
    env: {
      LLM_PROVIDER: "openai-compatible",
      OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
      OPENAI_API_KEY: "local",
      LLM_MODEL: "scripted"
    },
    sizes,
    close: async () => {
      await new Promise((r) => proxy.close(r))
      await wire.close()
    }
  }
}
