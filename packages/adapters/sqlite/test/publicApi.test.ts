/** The package's public surface is deliberate: documented, and as docs/api/sqlite.md lists it. */
import { publicApiSuite } from "../../../../scripts/publicApiSuite.js"

publicApiSuite("sqlite")
