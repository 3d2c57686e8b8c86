/**
 * Stub of `@ixo/oracles-chain-client/react` for driving `@ixo/oracles-client-sdk@1.4.0` in tests
 * against a local oracle. The SDK imports seven names from it (dist/index.js:12-17, :2492;
 * dist/chunk-HAP2F7E2.js:2, :165-168, :705, :788). With `overrides: { baseUrl, wsUrl }` on every
 * hook, a wallet whose `address` is "" and no live agent, the SDK only ever:
 * - constructs `Payments` at module load (index.js:20), and
 * - calls `gqlClient.GetEntityById` from `useOraclesConfig` (chunk:714), even when `baseUrl` is
 *   given; answering `{ entity: null }` leaves `baseUrl` and `wsUrl` in charge (chunk:731-770).
 * Everything else is a chain, Matrix or crypto lookup the tests must never reach: it throws.
 */

const unavailable = (name) => {
  throw new Error(
    `@ixo/oracles-chain-client stub: ${name} is not available in tests (it needs the IXO chain or Matrix). ` +
      "Pass overrides { baseUrl, wsUrl } to the SDK's hooks, leave the wallet's address empty, and do not use live-agent, contract or memory-engine hooks."
  )
}

/** `useOraclesConfig`'s entity lookup: no entity, so the hooks' `baseUrl`/`wsUrl` overrides are used. */
export const gqlClient = {
  GetEntityById: async () => ({ entity: null })
}

export const Authz = {
  getOracleAuthZConfig: async () => unavailable("Authz.getOracleAuthZConfig")
}

/** Constructed at the SDK's module load (index.js:20); every method throws. */
export class Payments {
  constructor() {
    // biome-ignore lint/correctness/noConstructorReturn: every property read is a call that throws
    return new Proxy(this, {
      get: (_target, property) =>
        typeof property === "string" && property !== "then"
          ? () => unavailable(`Payments.${property}`)
          : undefined
    })
  }
}

export const getMatrixUrlsForDid = async () => unavailable("getMatrixUrlsForDid")

export const getOracleAgentCard = async () => unavailable("getOracleAgentCard")

export const normalizeMatrixHomeServerUrl = () => unavailable("normalizeMatrixHomeServerUrl")

export const CryptoUtils = {
  encrypt: () => unavailable("CryptoUtils.encrypt"),
  decrypt: () => unavailable("CryptoUtils.decrypt")
}
