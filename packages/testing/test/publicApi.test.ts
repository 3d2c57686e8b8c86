/** The package's public surface is deliberate: documented, and as docs/api/testing.md lists it. */
import { publicApiSuite } from "../../../scripts/publicApiSuite.js"

publicApiSuite("testing")
