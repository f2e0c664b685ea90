#include "sim/config/units.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace p2psim::config {
namespace {

using u128 = unsigned __int128;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A leading decimal number split from its unit: "1.5 GiB" -> {"1", "5", "", "GiB"}.
struct number_parts {
  std::string_view whole, fraction, exponent, unit;
  std::string_view number;  // whole through exponent, for std::from_chars
};

// Returns false if the text does not start with a number.
bool split_number(std::string_view s, number_parts& out) {
  size_t i = 0;
  while (i < s.size() && is_digit(s[i])) ++i;
  out.whole = s.substr(0, i);
  if (i < s.size() && s[i] == '.') {
    size_t start = ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
    out.fraction = s.substr(start, i - start);
  }
  if (out.whole.empty() && out.fraction.empty()) return false;
  // An exponent needs a digit after 'e' (and an optional sign), else "e" starts a unit.
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    if (j < s.size() && is_digit(s[j])) {
      while (j < s.size() && is_digit(s[j])) ++j;
      out.exponent = s.substr(i, j - i);
      i = j;
    }
  }
  out.number = s.substr(0, i);
  out.unit = trim(s.substr(i));
  return true;
}

std::string quoted(std::string_view s) {
  return fmt::format("'{}'", s);
}

// Shared front end of the floating-point parsers: sign, garbage, NaN and infinity checks.
double parse_real(std::string_view text, std::string_view what, std::string_view example,
                  number_parts& parts) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '-')
    throw std::invalid_argument(fmt::format("{} must not be negative, got {}", what, quoted(text)));
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (!split_number(s, parts))
    throw std::invalid_argument(
        fmt::format("expected {} such as {}, got {}", what, example, quoted(text)));
  double v = 0;
  auto [end, ec] = std::from_chars(parts.number.data(), parts.number.data() + parts.number.size(),
                                   v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range || !std::isfinite(v))
    throw std::invalid_argument(fmt::format("{} {} is out of range", what, quoted(text)));
  if (ec != std::errc() || end != parts.number.data() + parts.number.size())
    throw std::invalid_argument(
        fmt::format("expected {} such as {}, got {}", what, example, quoted(text)));
  return v;
}

template <size_t N>
const std::pair<const char*, double>* find_unit(const std::pair<const char*, double> (&table)[N],
                                                std::string_view unit) {
  for (const auto& entry : table)
    if (unit == entry.first) return &entry;
  return nullptr;
}

double scaled(double v, double factor, std::string_view what, std::string_view text) {
  double r = v * factor;
  if (!std::isfinite(r))
    throw std::invalid_argument(fmt::format("{} {} is too large", what, quoted(text)));
  return r;
}

}  // namespace

uint64_t parse_size(std::string_view text) {
  static const std::pair<const char*, u128> units[] = {
      {"B", 1},
      {"KiB", u128(1) << 10},
      {"MiB", u128(1) << 20},
      {"GiB", u128(1) << 30},
      {"TiB", u128(1) << 40},
      {"PiB", u128(1) << 50},
      {"EiB", u128(1) << 60},
      {"kB", 1000},
      {"MB", 1000000},
      {"GB", 1000000000},
      {"TB", 1000000000000},
      {"PB", 1000000000000000},
  };
  const std::string expected =
      fmt::format("expected a size such as 256MiB or 4KiB, got {}", quoted(text));
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '-')
    throw std::invalid_argument(fmt::format("size must not be negative, got {}", quoted(text)));
  number_parts p;
  if (!split_number(s, p) || !p.exponent.empty()) throw std::invalid_argument(expected);
  u128 mult = 0;
  if (p.unit.empty()) {
    if (!p.fraction.empty()) throw std::invalid_argument(expected);
    mult = 1;
  } else {
    for (const auto& [name, m] : units)
      if (p.unit == name) mult = m;
    if (p.unit == "KB" || p.unit == "K")
      throw std::invalid_argument(fmt::format(
          "ambiguous size unit '{}' in {}: write kB (1000) or KiB (1024)", p.unit, quoted(text)));
    if (mult == 0)
      throw std::invalid_argument(
          fmt::format("unknown size unit '{}' in {} (use B, KiB, MiB, GiB, TiB, PiB, EiB, kB, "
                      "MB, GB, TB or PB)",
                      p.unit, quoted(text)));
  }
  const u128 max64 = std::numeric_limits<uint64_t>::max();
  const std::string too_large =
      fmt::format("size {} is too large (the limit is 2^64-1 bytes)", quoted(text));
  u128 whole = 0;
  for (char c : p.whole) {
    whole = whole * 10 + unsigned(c - '0');
    if (whole > max64) throw std::invalid_argument(too_large);
  }
  // The fraction is kept exact: digits / 10^k, and must give whole bytes.
  std::string_view frac = p.fraction;
  while (!frac.empty() && frac.back() == '0') frac.remove_suffix(1);
  if (frac.size() > 18)
    throw std::invalid_argument(fmt::format("size {} has too many decimals", quoted(text)));
  u128 frac_num = 0, frac_den = 1;
  for (char c : frac) {
    frac_num = frac_num * 10 + unsigned(c - '0');
    frac_den *= 10;
  }
  if ((frac_num * mult) % frac_den != 0)
    throw std::invalid_argument(
        fmt::format("size {} is not a whole number of bytes", quoted(text)));
  u128 total = whole * mult + frac_num * mult / frac_den;
  if (total > max64) throw std::invalid_argument(too_large);
  return uint64_t(total);
}

double parse_time_ns(std::string_view text) {
  static const std::pair<const char*, double> units[] = {
      {"ps", 1e-3}, {"ns", 1.0}, {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  number_parts p;
  double v = parse_real(text, "a time", "110ns or 1.5us", p);
  if (p.unit.empty()) {
    if (v == 0) return 0;
    throw std::invalid_argument(
        fmt::format("time {} needs a unit (ps, ns, us, ms or s), e.g. 110ns", quoted(text)));
  }
  const auto* u = find_unit(units, p.unit);
  if (!u)
    throw std::invalid_argument(fmt::format(
        "unknown time unit '{}' in {} (use ps, ns, us, ms or s)", p.unit, quoted(text)));
  const double ns = scaled(v, u->second, "time", text);
  // SystemC's clock counts picoseconds in 64 bits; a longer time would wrap or turn into 0.
  if (ns * 1e3 >= 18446744073709551616.0)
    throw std::invalid_argument(
        fmt::format("time {} is too large: simulated time counts picoseconds in 64 bits, which "
                    "ends after about 213 days",
                    quoted(text)));
  return ns;
}

double parse_bandwidth_gbs(std::string_view text) {
  static const std::pair<const char*, double> units[] = {
      {"B/s", 1e-9},
      {"kB/s", 1e-6},
      {"MB/s", 1e-3},
      {"GB/s", 1.0},
      {"TB/s", 1e3},
      {"KiB/s", 1024e-9},
      {"MiB/s", 1048576e-9},
      {"GiB/s", 1073741824e-9},
      {"TiB/s", 1099511627776e-9},
      {"b/s", 1e-9 / 8},
      {"kb/s", 1e-6 / 8},
      {"Kb/s", 1e-6 / 8},
      {"Mb/s", 1e-3 / 8},
      {"Gb/s", 1.0 / 8},
      {"Tb/s", 1e3 / 8},
      {"bps", 1e-9 / 8},
      {"kbps", 1e-6 / 8},
      {"Kbps", 1e-6 / 8},
      {"Mbps", 1e-3 / 8},
      {"Gbps", 1.0 / 8},
      {"Tbps", 1e3 / 8},
  };
  number_parts p;
  double v = parse_real(text, "a bandwidth", "20.8GB/s or 100Gb/s", p);
  if (p.unit.empty()) {
    if (v == 0) return 0;
    throw std::invalid_argument(
        fmt::format("bandwidth {} needs a unit such as GB/s, MB/s or Gb/s", quoted(text)));
  }
  if (p.unit == "KB/s")
    throw std::invalid_argument(fmt::format(
        "ambiguous bandwidth unit 'KB/s' in {}: write kB/s (1000) or KiB/s (1024)", quoted(text)));
  const auto* u = find_unit(units, p.unit);
  if (!u)
    throw std::invalid_argument(fmt::format(
        "unknown bandwidth unit '{}' in {} (use B/s, kB/s, MB/s, GB/s, TB/s, KiB/s..TiB/s, or "
        "bits: b/s, kb/s, Mb/s, Gb/s, Tb/s)",
        p.unit, quoted(text)));
  const double gbs = scaled(v, u->second, "bandwidth", text);
  // A TLP's time must fit the simulated clock (see parse_time_ns): a 4 KiB one stops fitting
  // below about 2e-4 B/s. 1 B/s is a round floor above that.
  if (gbs > 0 && gbs < 1e-9)
    throw std::invalid_argument(fmt::format(
        "bandwidth {} is too small: at least 1 B/s (or 0 where 0 means no limit)", quoted(text)));
  return gbs;
}

uint64_t parse_address(std::string_view text) {
  const std::string expected =
      fmt::format("expected an address such as 0x4000_0000_0000 or 4096, got {}", quoted(text));
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '-')
    throw std::invalid_argument(fmt::format("address must not be negative, got {}", quoted(text)));
  unsigned base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty() || s.front() == '_' || s.back() == '_') throw std::invalid_argument(expected);
  u128 v = 0;
  for (char c : s) {
    if (c == '_') continue;
    unsigned d;
    if (is_digit(c))
      d = unsigned(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = unsigned(c - 'a' + 10);
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = unsigned(c - 'A' + 10);
    else
      throw std::invalid_argument(expected);
    v = v * base + d;
    if (v > std::numeric_limits<uint64_t>::max())
      throw std::invalid_argument(fmt::format("address {} does not fit in 64 bits", quoted(text)));
  }
  return uint64_t(v);
}

std::string format_size(uint64_t bytes) {
  static const std::pair<int, const char*> units[] = {{60, "EiB"}, {50, "PiB"}, {40, "TiB"},
                                                      {30, "GiB"}, {20, "MiB"}, {10, "KiB"}};
  if (bytes != 0)
    for (const auto& [shift, name] : units)
      if (bytes % (uint64_t(1) << shift) == 0) return fmt::format("{}{}", bytes >> shift, name);
  return fmt::format("{}B", bytes);
}

std::string format_time_ns(double ns) {
  if (ns == 0) return "0";
  // The shortest text that reads back as the same double, in the largest unit that keeps it
  // a round number where one exists.
  if (ns >= 1e6 && std::fmod(ns, 1e6) == 0) return fmt::format("{}ms", ns / 1e6);
  if (ns >= 1e3 && std::fmod(ns, 1e3) == 0) return fmt::format("{}us", ns / 1e3);
  if (ns < 1) return fmt::format("{}ps", ns * 1e3);
  return fmt::format("{}ns", ns);
}

std::string format_bandwidth_gbs(double gbs) {
  if (gbs == 0) return "0";
  return fmt::format("{}GB/s", gbs);
}

std::string format_address(uint64_t address) {
  std::string hex = fmt::format("{:x}", address);
  std::string out;
  for (size_t i = 0; i < hex.size(); ++i) {
    if (i != 0 && (hex.size() - i) % 4 == 0) out += '_';
    out += hex[i];
  }
  return "0x" + out;
}

}  // namespace p2psim::config
