/**
 * `pnpm demo`: the embedded demo (examples/embed/main.ts): two turns of one conversation on the
 * examples' catalog, offline, with the scripted router standing in for the model.
 */
import { main } from "./embed/main.js"

await main()
