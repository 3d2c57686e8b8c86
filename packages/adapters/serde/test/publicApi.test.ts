/** The package's public surface is deliberate: documented, and as docs/api/serde.md lists it. */
import { publicApiSuite } from "../../../../scripts/publicApiSuite.js"

publicApiSuite("serde")
