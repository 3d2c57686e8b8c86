/**
 * `pnpm plugboard …`: runs the CLI from its TypeScript sources (run with
 * `node --conditions=@plugboard/source`, so workspace packages resolve to `src/`).
 *
 * Effect is imported before the TypeScript loader is registered. Node 20 runs loader hooks on a
 * separate thread, one round trip per module; Effect's few hundred modules cost about a quarter
 * of a second through them, and are plain JavaScript that needs no loader. Once loaded, later
 * `import "effect"` statements in the sources are answered from Node's module cache.
 */
await import("effect")
const { register } = await import("tsx/esm/api")
register()
await import("../packages/host-node/src/cli/main.ts")
