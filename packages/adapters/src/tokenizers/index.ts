/**
 * `@plugboard/adapters/tokenizers`: exact `TokenCounter` implementations (js-tiktoken, bundled
 * o200k and cl100k ranks, no runtime downloads).
 */

export * from "./PieceCache.js"
export * from "./Tiktoken.js"
