#include "sim/config/param_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/config/units.h"

namespace p2psim::config {
namespace {

using params::unit;

bool is_pow2(uint64_t v) {
  return v && !(v & (v - 1));
}

std::string bound_text(const params::declaration& d, double v) {
  return d.unit == unit::size ? format_size(uint64_t(v)) : fmt::format("{}", v);
}

// A size outside its declared limits -> the error the reader gives for out-of-range values.
void check_size(const node_reader& r, const std::string& key, const params::declaration& d,
                uint64_t v) {
  const auto& l = d.limits;
  if (v == 0 && l.zero_allowed) return;
  const bool in_range = v >= l.min && (!l.max || v <= *l.max);
  if (in_range && (!l.power_of_two || is_pow2(v))) return;
  const std::string zero = l.zero_allowed ? " (or 0)" : "";
  std::string expected;
  if (l.power_of_two && l.max && *l.max == 2 * l.min)
    expected = fmt::format("{} or {}{}", bound_text(d, l.min), bound_text(d, *l.max), zero);
  else if (l.power_of_two)
    expected = l.max ? fmt::format("a power of two from {} to {}{}", bound_text(d, l.min),
                                   bound_text(d, *l.max), zero)
                     : fmt::format("a power of two of at least {}{}", bound_text(d, l.min), zero);
  else
    expected = l.max ? fmt::format("{} to {}{}", bound_text(d, l.min), bound_text(d, *l.max), zero)
                     : fmt::format("at least {}{}", bound_text(d, l.min), zero);
  r.fail(key, fmt::format("expected {}, got {}", expected, format_size(v)));
}

}  // namespace

params::value read_value(const node_reader& r, const std::string& key, const params::declaration& d,
                         const params::value& current) {
  params::value v = current;
  if (d.optional && !r.has(key)) return v;
  v.present = true;
  const auto& l = d.limits;
  switch (d.unit) {
    case unit::size:
      v.count = r.size(key, current.count);
      v.number = double(v.count);
      check_size(r, key, d, v.count);
      break;
    case unit::address:
      if (auto a = r.optional_address(key)) v.count = *a;
      v.number = double(v.count);
      break;
    case unit::time:
      v.number = r.time_ns(key, current.number);
      break;
    case unit::bandwidth:
      v.number = r.bandwidth_gbs(key, current.number);
      // A rate that every byte is divided by: 0 would be an infinite time.
      if (l.above_zero && v.number == 0) r.fail(key, "expected a bandwidth above 0");
      break;
    case unit::integer: {
      const int64_t hi = l.max ? int64_t(*l.max) : INT64_MAX;
      v.number = double(r.integer(key, int64_t(l.min), hi, int64_t(current.number)));
      v.count = uint64_t(v.number);
      break;
    }
    case unit::boolean:
      v.flag = r.boolean(key, current.flag);
      break;
    case unit::choice:
      v.name = r.choice(key, d.choices, current.name);
      break;
  }
  return v;
}

namespace {

// An entry of a bound list (by index) with its key relative to the map being read.
struct entry_ref {
  size_t index;
  std::string key;
};

void read_entries(const node_reader& r, const std::vector<params::bound>& ps,
                  const std::vector<entry_ref>& entries) {
  std::vector<std::string> sections;  // nested maps, in declaration order
  for (const auto& e : entries) {
    const auto dot = e.key.find('.');
    if (dot == std::string::npos) {
      const auto& p = ps[e.index];
      p.set(read_value(r, e.key, *p.decl, p.get()));
      continue;
    }
    const std::string first = e.key.substr(0, dot);
    if (std::find(sections.begin(), sections.end(), first) != sections.end()) continue;
    sections.push_back(first);
    auto child = r.optional_child(first);
    if (!child) continue;
    std::vector<entry_ref> inner;
    for (const auto& f : entries)
      if (f.key.compare(0, first.size() + 1, first + ".") == 0)
        inner.push_back({f.index, f.key.substr(first.size() + 1)});
    read_entries(*child, ps, inner);
    child->done();
  }
}

}  // namespace

void read_params(const node_reader& r, const std::vector<params::bound>& ps,
                 const std::string& section) {
  std::vector<entry_ref> entries;
  const std::string prefix = section.empty() ? "" : section + ".";
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i].decl->key.compare(0, prefix.size(), prefix) == 0)
      entries.push_back({i, ps[i].decl->key.substr(prefix.size())});
  read_entries(r, ps, entries);
}

}  // namespace p2psim::config
