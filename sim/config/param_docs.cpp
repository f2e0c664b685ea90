#include "sim/config/param_docs.h"

#include <fmt/format.h>

#include "sim/config/units.h"

namespace p2psim::config {
namespace {

using params::unit;

std::string bound(const params::declaration& d, double v) {
  return d.unit == unit::size ? format_size(uint64_t(v)) : fmt::format("{}", v);
}

}  // namespace

std::string type_text(const params::declaration& d) {
  const auto& l = d.limits;
  const std::string zero = l.zero_allowed ? ", or 0" : "";
  switch (d.unit) {
    case unit::size:
      if (l.power_of_two && l.max && *l.max == 2 * l.min)
        return fmt::format("size: {} or {}{}", bound(d, l.min), bound(d, *l.max), zero);
      if (l.power_of_two)
        return l.max ? fmt::format("size: a power of two, {}..{}{}", bound(d, l.min),
                                   bound(d, *l.max), zero)
                     : fmt::format("size: a power of two, at least {}{}", bound(d, l.min), zero);
      return "size";
    case unit::address:
      return "address";
    case unit::time:
      return "time";
    case unit::bandwidth:
      return l.above_zero ? "bandwidth, above 0" : "bandwidth";
    case unit::integer:
      return l.max ? fmt::format("integer {}..{}", bound(d, l.min), bound(d, *l.max)) : "integer";
    case unit::boolean:
      return "boolean";
    case unit::choice: {
      std::string out;
      for (const auto& c : d.choices) out += (out.empty() ? "`" : " \\| `") + c + "`";
      return out;
    }
  }
  return "";
}

std::string format_value(const params::declaration& d, const params::value& v) {
  if (!v.present) return "";
  switch (d.unit) {
    case unit::size:
      return format_size(v.count);
    case unit::address:
      return format_address(v.count);
    case unit::time:
      return format_time_ns(v.number);
    case unit::bandwidth:
      return format_bandwidth_gbs(v.number);
    case unit::integer:
      return fmt::format("{}", int64_t(v.number));
    case unit::boolean:
      return v.flag ? "true" : "false";
    case unit::choice:
      return v.name;
  }
  return "";
}

std::string markdown_table(const std::vector<param_row>& rows) {
  std::string out = "| Key | Type | Default | Meaning |\n| --- | --- | --- | --- |\n";
  for (const auto& r : rows)
    out += fmt::format("| `{}` | {} | {} | {} |\n", r.key, r.type, r.default_text, r.meaning);
  return out;
}

}  // namespace p2psim::config
