// A strict JSON scanner (RFC 8259) that keeps byte offsets: every value knows the raw bytes it
// came from, so a notebook can be edited by splicing new bytes into the original file, leaving
// every other byte as it was. Strings are decoded (escapes, surrogate pairs) and re-encoded in
// the style the file uses (encode_string).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torchport::notebook {

struct Member;

/// One JSON value with its raw byte range [begin, end) in the scanned text.
struct Value {
  enum class Kind : std::uint8_t { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::string str;              ///< Kind::String: the decoded text (UTF-8)
  std::vector<Value> items;     ///< Kind::Array
  std::vector<Member> members;  ///< Kind::Object, in file order

  /// The last member named `key` (JSON readers keep the last of duplicate keys), or nullptr.
  const Value* member(std::string_view key) const;
};

/// One member of an object.
struct Member {
  std::string key;
  Value value;
};

/// Why the text is not JSON: the byte offset of the first offending byte and a message.
struct ScanError {
  std::uint32_t offset = 0;
  std::string message;
};

/// The deepest nesting of arrays and objects scan() accepts (a notebook nests a few levels;
/// the limit keeps the recursion off the end of the stack on hostile input).
inline constexpr int kMaxJsonDepth = 256;

/// Scans `text` (UTF-8; a leading BOM is skipped). False, with `error`, when it is not one
/// JSON value (optionally surrounded by whitespace), or larger than 4 GiB.
bool scan(std::string_view text, Value& out, ScanError& error);

/// Decodes the raw bytes of a JSON string token (quotes included). False when it is not one.
bool decode_string(std::string_view raw, std::string& out);

/// How a file writes the characters JSON lets a writer choose: non-ASCII as raw UTF-8 or as
/// \uXXXX escapes, and the letter case of hex digits in escapes.
struct StringStyle {
  bool ascii = false;      ///< non-ASCII as \uXXXX (Python's json.dump ensure_ascii=True)
  bool upper_hex = false;  ///< \u00E9 rather than \u00e9
};

/// The JSON string token (quotes included) of `text` in `style`, as Python's json module writes
/// it: `"` and `\` escaped, \n \r \t \b \f for those controls, other controls as \u00XX, `/`
/// and DEL as they are.
std::string encode_string(std::string_view text, const StringStyle& style);

/// One character of a string token: its decoded bytes' length and its raw bytes' range in the
/// token. A token is a sequence of these (escapes, raw UTF-8 sequences, plain bytes).
struct Unit {
  std::uint32_t decoded_len = 0;
  std::uint32_t raw_begin = 0;  ///< relative to the token's opening quote
  std::uint32_t raw_end = 0;
};

/// The units of a valid string token (quotes excluded from the units).
std::vector<Unit> string_units(std::string_view raw);

/// 1-based line and column (in bytes) of `offset` in `text`, for messages.
std::pair<std::uint32_t, std::uint32_t> line_col(std::string_view text, std::uint32_t offset);

}  // namespace torchport::notebook
