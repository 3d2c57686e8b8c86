// A module hook that makes @plugboard/embeddings look uninstalled, as on a host that never
// installed that optional peer (used by embeddingModel.test.ts).
import { register } from "node:module"

register(
  `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      if (specifier === "@plugboard/embeddings" || specifier.startsWith("@plugboard/embeddings/")) {
        const error = new Error("Cannot find package '@plugboard/embeddings' imported from " + context.parentURL)
        error.code = "ERR_MODULE_NOT_FOUND"
        throw error
      }
      return next(specifier, context)
    }
  `)}`
)
