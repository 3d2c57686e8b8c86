// A module hook that makes @langchain/openai look uninstalled, as on a host that never installed
// that optional peer (used by optionalPeers.test.ts).
import { register } from "node:module"

register(
  `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      if (specifier === "@langchain/openai" || specifier.startsWith("@langchain/openai/")) {
        const error = new Error("Cannot find package '@langchain/openai' imported from " + context.parentURL)
        error.code = "ERR_MODULE_NOT_FOUND"
        throw error
      }
      return next(specifier, context)
    }
  `)}`
)
