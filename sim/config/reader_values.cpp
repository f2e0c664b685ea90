// node_reader's scalar getters: types, ranges and units.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "sim/config/reader.h"
#include "sim/config/reader_detail.h"
#include "sim/config/units.h"

namespace p2psim::config {
namespace {

using detail::describe;
using detail::join;

std::string number_text(double v) {
  return fmt::format("{:g}", v);
}

}  // namespace

// ---- node_reader: scalars ----------------------------------------------------------------

std::string node_reader::scalar(const entry& e, const char* expected) const {
  if (!e.value.IsScalar())
    fail(e.key, fmt::format("expected {}, got {}", expected, describe(e.value)));
  return e.value.Scalar();
}

std::string node_reader::str(const std::string& key) const {
  return scalar(required(key), "a string");
}

std::string node_reader::str(const std::string& key, const std::string& def) const {
  return has(key) ? str(key) : def;
}

int64_t node_reader::integer(const std::string& key, int64_t min, int64_t max) const {
  const entry& e = required(key);
  std::string expected = max == std::numeric_limits<int64_t>::max()
                             ? fmt::format("an integer >= {}", min)
                             : fmt::format("an integer from {} to {}", min, max);
  std::string text = scalar(e, expected.c_str());
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v < min || v > max)
    fail(key, fmt::format("expected {}, got '{}'", expected, text));
  return v;
}

int64_t node_reader::integer(const std::string& key, int64_t min, int64_t max, int64_t def) const {
  return has(key) ? integer(key, min, max) : def;
}

double node_reader::number(const std::string& key, double min, double max) const {
  const entry& e = required(key);
  std::string expected =
      std::isinf(max) ? fmt::format("a number >= {}", number_text(min))
                      : fmt::format("a number from {} to {}", number_text(min), number_text(max));
  std::string text = scalar(e, expected.c_str());
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v) ||
      v < min || v > max)
    fail(key, fmt::format("expected {}, got '{}'", expected, text));
  return v;
}

double node_reader::number(const std::string& key, double min, double max, double def) const {
  return has(key) ? number(key, min, max) : def;
}

bool node_reader::boolean(const std::string& key) const {
  std::string text = scalar(required(key), "true or false");
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  fail(key, fmt::format("expected true or false, got '{}'", text));
}

bool node_reader::boolean(const std::string& key, bool def) const {
  return has(key) ? boolean(key) : def;
}

// The unit parsers' messages already quote the value and say what was expected.
template <class T>
T node_reader::with_units(const std::string& key, T (*parser)(std::string_view),
                          const char* what) const {
  std::string text = scalar(required(key), what);
  try {
    return parser(text);
  } catch (const std::invalid_argument& e) {
    fail(key, e.what());
  }
}

uint64_t node_reader::size(const std::string& key) const {
  return with_units(key, parse_size, "a size such as 256MiB or 4KiB");
}
double node_reader::time_ns(const std::string& key) const {
  return with_units(key, parse_time_ns, "a time such as 110ns or 1.5us");
}
double node_reader::bandwidth_gbs(const std::string& key) const {
  return with_units(key, parse_bandwidth_gbs, "a bandwidth such as 20.8GB/s");
}
uint64_t node_reader::address(const std::string& key) const {
  return with_units(key, parse_address, "an address such as 0x4000_0000_0000");
}

uint64_t node_reader::size(const std::string& key, uint64_t def) const {
  return has(key) ? size(key) : def;
}
double node_reader::time_ns(const std::string& key, double def) const {
  return has(key) ? time_ns(key) : def;
}
double node_reader::bandwidth_gbs(const std::string& key, double def) const {
  return has(key) ? bandwidth_gbs(key) : def;
}

std::optional<uint64_t> node_reader::optional_address(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return address(key);
}

std::string node_reader::choice(const std::string& key,
                                const std::vector<std::string>& allowed) const {
  std::string expected = fmt::format("one of: {}", join(allowed));
  std::string text = scalar(required(key), expected.c_str());
  for (const auto& a : allowed)
    if (text == a) return text;
  fail(key, fmt::format("expected {}, got '{}'", expected, text));
}

std::string node_reader::choice(const std::string& key, const std::vector<std::string>& allowed,
                                const std::string& def) const {
  return has(key) ? choice(key, allowed) : def;
}

std::string node_reader::choice(const std::string& key,
                                std::initializer_list<const char*> allowed) const {
  return choice(key, std::vector<std::string>(allowed.begin(), allowed.end()));
}

std::string node_reader::choice(const std::string& key, std::initializer_list<const char*> allowed,
                                const std::string& def) const {
  return choice(key, std::vector<std::string>(allowed.begin(), allowed.end()), def);
}

}  // namespace p2psim::config
