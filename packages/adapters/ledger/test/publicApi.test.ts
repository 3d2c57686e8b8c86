/** The package's public surface is deliberate: documented, and as docs/api/ledger.md lists it. */
import { publicApiSuite } from "../../../../scripts/publicApiSuite.js"

publicApiSuite("ledger")
