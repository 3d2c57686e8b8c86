/** The package's public surface is deliberate: documented, and as docs/api/redis.md lists it. */
import { publicApiSuite } from "../../../../scripts/publicApiSuite.js"

publicApiSuite("redis")
