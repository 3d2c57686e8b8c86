/** The package's public surface is deliberate: documented, and as docs/api/ai-sdk.md lists it. */
import { publicApiSuite } from "../../../../scripts/publicApiSuite.js"

publicApiSuite("ai-sdk")
