#include "sim/config/text.h"

#include <fmt/format.h>

#include "sim/config/error.h"

namespace p2psim::config {
namespace {

// Length of the UTF-8 sequence starting at text[i], or 0 if it is not one. Follows the table of
// well-formed sequences in the Unicode Standard (3.9, table 3-7): no overlong forms, no
// surrogates, nothing above U+10FFFF.
size_t utf8_length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3;
    if (b == 0xe0) lo = 0xa0;
    if (b == 0xed) hi = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

}  // namespace

source_loc loc_at(std::string_view text, size_t offset, const std::string& file) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  return {file, line, int(offset - line_start + 1)};
}

void check_text(std::string_view text, const std::string& file, const std::string& format) {
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\0')
      throw error(loc_at(text, i, file), "",
                  fmt::format("not a text file (a NUL byte here); expected {}", format));
    const size_t n = utf8_length(text, i);
    if (n == 0)
      throw error(loc_at(text, i, file), "",
                  fmt::format("not UTF-8 text: byte {:#04x} here does not begin a valid UTF-8 "
                              "character ({} files are read as UTF-8)",
                              static_cast<unsigned char>(text[i]), format));
    i += n;
  }
}

}  // namespace p2psim::config
