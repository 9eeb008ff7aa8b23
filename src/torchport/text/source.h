// Decoding a Python source file: PEP 263 coding declarations, the UTF-8 BOM, and the way back.
//
// The parser works on UTF-8 text with the original line endings kept (LF, CRLF or CR), so
// byte offsets and CPython's columns (UTF-8 bytes from the line start) agree. Files in another
// encoding are converted to UTF-8 on the way in and back on the way out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace torchport::text {

struct SourceFile {
  std::string path;  ///< as given by the caller, used in diagnostics
  std::string text;  ///< UTF-8, BOM removed, original line endings kept
  std::string
      encoding;      ///< canonical codec name: "utf-8", "latin-1", "cp1252", "gbk", "gb18030", ...
  bool bom = false;  ///< the file started with a UTF-8 BOM
};

struct DecodeError {
  std::uint64_t byte_offset = 0;  ///< offset of the first offending byte in the raw file
  std::string encoding;           ///< the encoding that was tried
  std::string message;            ///< e.g. "invalid continuation byte"
};

struct DecodeResult {
  std::optional<SourceFile> source;  ///< set on success
  std::optional<DecodeError> error;  ///< set on failure
};

/// Decodes raw file bytes as CPython does: BOM, then a PEP 263 declaration on line 1 or 2,
/// else UTF-8.
DecodeResult decode(std::string path, std::string_view bytes);
/// decode() of bytes the caller gives up: a UTF-8 file's text is moved into the result, not
/// copied (the whole file, once per file of a run). On failure `bytes` is left as it was (the
/// caller reports where decoding failed in it).
DecodeResult decode_owned(std::string path, std::string&& bytes);

/// Encodes `text` (UTF-8) back into the file's encoding and prepends the BOM if it had one.
/// decode() followed by encode() gives back the original bytes. A character the encoding
/// cannot represent becomes '?': use try_encode() to detect that case.
std::string encode(const SourceFile& source, std::string_view text);

/// Like encode(), but fails (returns nullopt and sets `*error`, if given, to a reason with the
/// byte offset in `text`) when `text` has a character the file's encoding cannot represent.
std::optional<std::string> try_encode(const SourceFile& source, std::string_view text,
                                      std::string* error = nullptr);

/// Reads the file at `path` and decodes it. A file that cannot be read gives a DecodeError
/// with an empty `encoding` and the reason ("cannot read file: No such file or directory").
DecodeResult decode_file(const std::string& path);

/// The canonical codec name ("utf-8", "latin-1", "gbk", ...) for a PEP 263 name, normalised
/// as CPython's codec lookup does; nullopt if torchport does not know the codec.
std::optional<std::string> canonical_encoding(std::string_view name);

}  // namespace torchport::text
