/**
 * `@plugboard/tokenizers`: exact `TokenCounter` implementations (js-tiktoken, bundled
 * o200k and cl100k ranks, no runtime downloads).
 */

export { cachedCounter } from "./PieceCache.js"
export {
  encodings,
  layerCl100k,
  layerO200k,
  layerTiktoken,
  loadTiktokenCounter,
  makeTiktokenCounter,
  type TiktokenCounter,
  type TiktokenEncoding,
  UnknownEncodingError
} from "./Tiktoken.js"
