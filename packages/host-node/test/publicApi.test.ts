/** The package's public surface is deliberate: documented, and as docs/api/host-node.md lists it. */
import { publicApiSuite } from "../../../scripts/publicApiSuite.js"

publicApiSuite("host-node")
