/**
 * The provider SDKs are optional peers of `@plugboard/models` (docs/packages.md): a host that
 * runs the scripted model, or one provider, installs only what it uses. A provider whose SDK is
 * missing is a configuration problem that `resolveSettings` reports at boot, naming the package to
 * install and the variable that asked for it, instead of a module-resolution error.
 */
import { Data } from "effect"
import { anthropic, ollama, openai } from "./internal/sdks.js"

/** An optional provider package: its name, the range this package supports, and whether it loaded. */
export interface ProviderPackage {
  readonly name: ProviderPackageName
  readonly range: string
  readonly installed: boolean
}

/** The ranges declared in this package's `peerDependencies` (a test keeps them equal). */
export const PEER_RANGES = {
  "@langchain/anthropic": "^1.5.11",
  "@langchain/ollama": "^1.3.0",
  "@langchain/openai": "1.5.8"
} as const

/** An optional provider package's name. */
export type ProviderPackageName = keyof typeof PEER_RANGES

const installed: Readonly<Record<ProviderPackageName, boolean>> = {
  "@langchain/anthropic": anthropic !== undefined,
  "@langchain/ollama": ollama !== undefined,
  "@langchain/openai": openai !== undefined
}

const packageOf = (provider: string): ProviderPackageName | undefined => {
  switch (provider) {
    case "openai":
    case "openai-compatible":
      return "@langchain/openai"
    case "anthropic":
      return "@langchain/anthropic"
    case "ollama":
      return "@langchain/ollama"
    default:
      return undefined
  }
}

/** The optional package a provider needs (none for `scripted` or an unknown provider). */
export const providerPackage = (provider: string): ProviderPackage | undefined => {
  const name = packageOf(provider)
  return name === undefined ? undefined : { name, range: PEER_RANGES[name], installed: installed[name] }
}

/** The command that installs an optional provider package in the range this package supports. */
export const installCommand = (name: ProviderPackageName): string =>
  `npm install ${name}@${JSON.stringify(PEER_RANGES[name])}`

/**
 * Thrown when a model is built for a provider whose SDK is not installed. Thrown to plain callers
 * (a model is built outside Effect): a `Data.TaggedError` is a real `Error` whose `name` is its tag, so plain callers see the same name, message and stack as before.
 */
export class ProviderPackageMissing extends Data.TaggedError("ProviderPackageMissing")<{
  readonly packageName: ProviderPackageName
  readonly message: string
}> {
  constructor(packageName: ProviderPackageName) {
    super({
      packageName,
      message: `${packageName} is not installed; it is an optional peer of @plugboard/models: ${installCommand(packageName)}.`
    })
  }
}

/** The SDK's module, or `ProviderPackageMissing` thrown. */
export const required = <M>(name: ProviderPackageName, sdk: M | undefined): M => {
  if (sdk === undefined) throw new ProviderPackageMissing(name)
  return sdk
}
