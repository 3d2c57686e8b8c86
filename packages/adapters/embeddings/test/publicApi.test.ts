/** The package's public surface is deliberate: documented, and as docs/api/embeddings.md lists it. */
import { publicApiSuite } from "../../../../scripts/publicApiSuite.js"

publicApiSuite("embeddings")
