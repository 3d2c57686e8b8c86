/** Types of the stub (see react.js): only what @ixo/oracles-client-sdk@1.4.0's declarations name. */
export type TransactionFn = (...args: Array<never>) => Promise<unknown>
export type IAuthzConfig = Record<string, unknown>
export type TResolvedAgentCard = Record<string, unknown>
export declare const gqlClient: {
  GetEntityById(variables: { id: string }): Promise<{ entity: null }>
}
export declare const Authz: { getOracleAuthZConfig(params: unknown): Promise<IAuthzConfig> }
export declare class Payments {}
export declare const getMatrixUrlsForDid: (did: string) => Promise<never>
export declare const getOracleAgentCard: (...args: Array<unknown>) => Promise<never>
export declare const normalizeMatrixHomeServerUrl: (url: string) => never
export declare const CryptoUtils: {
  encrypt(...args: Array<unknown>): never
  decrypt(...args: Array<unknown>): never
}
