/** Text arbitraries for the tokenizer properties, shared by the BPE and piece-cache tests. */
import * as fc from "fast-check"

// Pieces that hit every branch of both patterns and of the merge loop: words in both cases,
// contractions, digit runs, punctuation runs, whitespace kinds, accents, CJK, emoji, lone
// surrogates, special-token spellings, rare long words (many merges).
export const tricky: fc.Arbitrary<string> = fc.constantFrom(
  ..."aZ'sStTreVEmMllLdD 0123456789{}\":,./\\-_\n\r\t  éÉßσΣ日本語🙂\u0301\ud800".split(""),
  "'s",
  "'RE",
  "\r\n",
  "<|endoftext|>",
  "<|fim_prefix|>",
  "antidisestablishmentarianism",
  "Pneumonoultramicroscopic",
  "ZXQJVKW",
  "résumé naïve",
  "supercalifragilisticexpialidocious"
)
/** Tricky pieces joined, arbitrary binary strings, arbitrary graphemes. */
export const text: fc.Arbitrary<string> = fc.oneof(
  fc.array(tricky, { maxLength: 40 }).map((parts) => parts.join("")),
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({ unit: "grapheme", maxLength: 40 })
)
