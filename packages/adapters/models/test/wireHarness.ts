/**
 * The client side of the OpenAI-wire tests: an agent host that keeps a plugboard catalog itself,
 * as an app on a third-party framework does with plugboard's rules. It offers core's offer for its
 * `loadedPlugins` (`Offer.offer`), runs the meta-tools with core (`MetaTools`) and the plugins'
 * handlers itself, and sends the results back. The model behind the wire knows nothing of it.
 */
import { Catalog, LoadedPlugins, MetaTools, Offer, type Plugin } from "@plugboard/core"
import { Either } from "effect"

/** A tool in the OpenAI function format, as a client sends it. */
export interface WireTool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: Record<string, unknown>
  }
}

/** One catalog host: what it offers now, and how it runs a call. */
export interface CatalogHost {
  readonly catalog: Catalog.Catalog
  /** The thread's loaded plugins so far. */
  readonly loaded: () => LoadedPlugins.LoadedPlugins
  /** Core's offer for the thread, in the OpenAI function format. */
  readonly tools: () => Array<WireTool>
  /** Runs one call and returns the text the model is sent back (a load updates the thread). */
  readonly run: (name: string, args: Record<string, unknown>) => Promise<string>
}

/** A host over `plugins` with an empty thread. */
export const catalogHost = (plugins: ReadonlyArray<Plugin>): CatalogHost => {
  const catalog = Catalog.unsafeMake(plugins)
  let loaded = LoadedPlugins.empty
  const handlers = new Map(
    plugins.flatMap((p) =>
      (p.tools ?? []).map((t) => [t.name, t.handler as (input: unknown, ctx: never) => unknown])
    )
  )
  return {
    catalog,
    loaded: () => loaded,
    tools: () =>
      Offer.offer(catalog, loaded).map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: { ...t.parameters } }
      })),
    run: async (name, args) => {
      if (name === MetaTools.LIST_CAPABILITIES)
        return MetaTools.formatToolMessage(Either.merge(MetaTools.listCapabilities(catalog, loaded, args)))
      if (name === MetaTools.LOAD_CAPABILITY) {
        const result = MetaTools.loadCapability(catalog, loaded, args)
        if (Either.isRight(result)) loaded = LoadedPlugins.union(loaded, result.right.newlyLoaded)
        return MetaTools.formatToolMessage(Either.merge(result))
      }
      const handler = handlers.get(name)
      if (handler === undefined) return JSON.stringify({ error: `no tool ${name}` })
      return JSON.stringify(await handler(args, {} as never))
    }
  }
}
