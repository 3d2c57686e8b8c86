/** The package's public surface is deliberate: documented, and as docs/api/codemode.md lists it. */
import { publicApiSuite } from "../../../../scripts/publicApiSuite.js"

publicApiSuite("codemode")
