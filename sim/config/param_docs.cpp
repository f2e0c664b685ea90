#include "sim/config/param_docs.h"

#include <fmt/format.h>

#include <stdexcept>

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

std::string regenerate_blocks(const std::string& doc, const std::string& marker,
                              const std::map<std::string, std::string>& tables) {
  const std::string open = "\n<!-- " + marker + ": ", close = "\n<!-- end " + marker + " -->";
  std::string out;
  size_t at = 0;
  for (size_t start; (start = doc.find(open, at)) != std::string::npos;) {
    const size_t name_end = doc.find(" -->\n", start + 1);
    if (name_end == std::string::npos)
      throw std::runtime_error("unterminated " + marker + " marker");
    const std::string name = doc.substr(start + open.size(), name_end - start - open.size());
    const size_t body = name_end + 5;
    const size_t end = doc.find(close, body - 1);
    if (end == std::string::npos)
      throw std::runtime_error(marker + " block '" + name + "' has no end marker");
    auto it = tables.find(name);
    if (it == tables.end())
      throw std::runtime_error("no " + marker + " table named '" + name + "'");
    out += doc.substr(at, body - at) + it->second;
    at = end + 1;
  }
  return out + doc.substr(at);
}

std::vector<param_row> rows(const std::vector<params::bound>& ps) {
  std::vector<param_row> out;
  for (const auto& p : ps) {
    std::string def = p.decl->default_means;
    if (def.empty()) {
      const std::string v = format_value(*p.decl, p.get());
      def = v.empty() ? "unset" : "`" + v + "`";
    }
    out.push_back({p.decl->key, type_text(*p.decl), def, p.decl->description});
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> values(const std::vector<params::bound>& ps) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : ps)
    if (std::string v = format_value(*p.decl, p.get()); !v.empty())
      out.emplace_back(p.decl->key, v);
  return out;
}

}  // namespace p2psim::config
