/**
 * `@plugboard/adapters/mcp` — MCP servers as plugins: the config file, connections, discovery
 * with an on-disk cache, and calls. What a server becomes in the catalog is core's rule
 * (`CatalogSource`); this adapter reads servers and translates.
 */
export type * from "./Types.js"
