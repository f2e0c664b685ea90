// One declaration per parameter. A model folder declares the settings a user may write next to
// the struct that holds them: key, member, unit, range and one line of description; the default
// is the member's initializer. Everything else is generated from the declaration: the strict
// YAML reader and its errors, `--set`, the effective-configuration dump and the parameter tables
// in docs/ (sim/config/param_reader.h, param_docs.h).
//
//   struct switch_spec { double latency_ns = 110; ... };
//   const params::table<switch_spec>& switch_spec_params() {
//     static const params::table<switch_spec> t{
//         params::time("latency", &switch_spec::latency_ns,
//                      "Ingress to egress, header in to header out."),
//         ...};
//     return t;
//   }
//
// Plain C++ with no dependency but the standard library, so that models declare their
// parameters without knowing about YAML or SystemC.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace p2psim::params {

// What a value means and how it is written (docs/formats-topology.md, "Values and units").
enum class unit {
  size,       // bytes: 4KiB, 256MiB
  time,       // nanoseconds: 110ns, 1.5us
  bandwidth,  // GB/s (1e9 bytes): 20.8GB/s, 100Gb/s
  integer,    // a count
  boolean,    // true / false
  choice,     // one of a list of names
  address,    // a bus address: 0x4000_8000_0000
};

// A value as read from a file or taken from a spec: `number` for size, address and integer
// (as an unsigned count), time and bandwidth; `name` for a choice; `flag` for a boolean.
struct value {
  double number = 0;
  uint64_t count = 0;
  bool flag = false;
  std::string name;
  bool present = true;  // false: an optional parameter that is not set
};

// The values a parameter accepts beyond its unit.
struct limits {
  double min = 0;             // inclusive
  std::optional<double> max;  // inclusive; none: the unit's own limit
  bool power_of_two = false;  // sizes: a power of two between min and max
  bool zero_allowed = false;  // 0 also accepted ("0 = none", "0 = infinite")
  bool above_zero = false;    // a rate that divides: strictly positive
};

// What a parameter is, apart from where it lives: all the reader and the docs need.
struct declaration {
  std::string key;  // dotted below a section: "p2p.write.routed"
  params::unit unit = params::unit::integer;
  std::string description;
  params::limits limits;
  std::vector<std::string> choices;  // unit::choice: the names, in the order docs list them
  bool optional = false;             // may be left unset (a std::optional member)
  std::string default_means;         // docs' default column, where the value alone misleads
};

template <class Spec>
struct param : declaration {
  std::function<value(const Spec&)> get;
  std::function<void(Spec&, const value&)> set;

  // Chained refinements: params::size("bar2", &s::bar2).power_of_two(4096).or_zero()
  param&& at_least(double v) && {
    limits.min = v;
    return std::move(*this);
  }
  param&& at_most(double v) && {
    limits.max = v;
    return std::move(*this);
  }
  param&& between(double lo, double hi) && {
    limits.min = lo;
    limits.max = hi;
    return std::move(*this);
  }
  param&& power_of_two(double lo, std::optional<double> hi = std::nullopt) && {
    limits.power_of_two = true;
    limits.min = lo;
    limits.max = hi;
    return std::move(*this);
  }
  param&& or_zero() && {
    limits.zero_allowed = true;
    return std::move(*this);
  }
  param&& above_zero() && {
    limits.above_zero = true;
    return std::move(*this);
  }
  param&& default_text(std::string text) && {
    default_means = std::move(text);
    return std::move(*this);
  }
};

template <class Spec>
using table = std::vector<param<Spec>>;

namespace detail {

template <class T>
struct optional_of {
  using type = T;
  static constexpr bool is_optional = false;
};
template <class T>
struct optional_of<std::optional<T>> {
  using type = T;
  static constexpr bool is_optional = true;
};

// A parameter over member `m`, converting between the member's type and `value` with `to` and
// `from` (on the unwrapped type of an optional member).
template <class Spec, class M, class To, class From>
param<Spec> over(std::string key, params::unit u, M Spec::*m, std::string description, To to,
                 From from) {
  using traits = optional_of<M>;
  param<Spec> p;
  p.key = std::move(key);
  p.unit = u;
  p.description = std::move(description);
  p.optional = traits::is_optional;
  p.get = [m, to](const Spec& s) {
    if constexpr (traits::is_optional) {
      if (!(s.*m)) {
        value v;
        v.present = false;
        return v;
      }
      return to(*(s.*m));
    } else {
      return to(s.*m);
    }
  };
  p.set = [m, from](Spec& s, const value& v) {
    if constexpr (traits::is_optional) {
      if (!v.present) {
        (s.*m).reset();
        return;
      }
    }
    s.*m = from(v);
  };
  return p;
}

}  // namespace detail

namespace detail {

// An unsigned count of its unit (bytes, an address), kept exact in value::count.
template <class Spec, class M>
param<Spec> exact(std::string key, params::unit u, M Spec::*m, std::string description) {
  using T = typename optional_of<M>::type;
  return over<Spec>(
      std::move(key), u, m, std::move(description),
      [](T v) {
        value out;
        out.count = v;
        out.number = double(v);
        return out;
      },
      [](const value& v) { return T(v.count); });
}

// A real number of its unit (ns, GB/s), in a double member.
template <class Spec, class M>
param<Spec> real(std::string key, params::unit u, M Spec::*m, std::string description) {
  return over<Spec>(
      std::move(key), u, m, std::move(description),
      [](double v) {
        value out;
        out.number = v;
        return out;
      },
      [](const value& v) { return v.number; });
}

}  // namespace detail

// Bytes, in a uint32_t/uint64_t member (or std::optional of one).
template <class Spec, class M>
param<Spec> size(std::string key, M Spec::*m, std::string description) {
  static_assert(std::is_unsigned_v<typename detail::optional_of<M>::type>,
                "a size is an unsigned byte count");
  return detail::exact(std::move(key), unit::size, m, std::move(description));
}

// A bus address, in a std::optional<uint64_t> (unset: allocated) or uint64_t member.
template <class Spec, class M>
param<Spec> address(std::string key, M Spec::*m, std::string description) {
  return detail::exact(std::move(key), unit::address, m, std::move(description));
}

// Nanoseconds in a double member.
template <class Spec, class M>
param<Spec> time(std::string key, M Spec::*m, std::string description) {
  return detail::real(std::move(key), unit::time, m, std::move(description));
}

// GB/s (1e9 bytes per second) in a double member.
template <class Spec, class M>
param<Spec> bandwidth(std::string key, M Spec::*m, std::string description) {
  return detail::real(std::move(key), unit::bandwidth, m, std::move(description));
}

// A whole number in an integer member; give its range with between().
template <class Spec, class M>
param<Spec> integer(std::string key, M Spec::*m, std::string description) {
  using T = typename detail::optional_of<M>::type;
  return detail::over<Spec>(
      std::move(key), unit::integer, m, std::move(description),
      [](T v) {
        value out;
        out.number = double(v);
        out.count = uint64_t(v);
        return out;
      },
      [](const value& v) { return T(v.number); });
}

template <class Spec>
param<Spec> boolean(std::string key, bool Spec::*m, std::string description) {
  return detail::over<Spec>(
      std::move(key), unit::boolean, m, std::move(description),
      [](bool v) {
        value out;
        out.flag = v;
        return out;
      },
      [](const value& v) { return v.flag; });
}

// One of a list of names, each standing for a value of the member's type (an enum, or any
// type with ==): choice("mode", &s::mode, {{"off", mode::off}, {"translating", ...}}, "...").
template <class Spec, class M>
param<Spec> choice(std::string key, M Spec::*m, std::vector<std::pair<std::string, M>> names,
                   std::string description) {
  std::vector<std::string> listed;
  for (const auto& n : names) listed.push_back(n.first);
  auto p = detail::over<Spec>(
      std::move(key), unit::choice, m, std::move(description),
      [names](const M& v) {
        value out;
        for (const auto& [name, x] : names)
          if (x == v) out.name = name;
        return out;
      },
      [names](const value& v) {
        for (const auto& [name, x] : names)
          if (name == v.name) return x;
        return names.front().second;  // unreachable: the reader accepts only listed names
      });
  p.choices = std::move(listed);
  return p;
}

// The parameters of a nested struct, under `section`: within("p2p.write", &s::p2p_write,
// policy_params()) declares "p2p.write.routed" and so on, each once, in the nested struct.
template <class Spec, class Inner>
table<Spec> within(const std::string& section, Inner Spec::*m, const table<Inner>& inner) {
  table<Spec> out;
  for (const auto& ip : inner) {
    param<Spec> p;
    static_cast<declaration&>(p) = ip;
    p.key = section.empty() ? ip.key : section + "." + ip.key;
    p.get = [m, get = ip.get](const Spec& s) { return get(s.*m); };
    p.set = [m, set = ip.set](Spec& s, const value& v) { set(s.*m, v); };
    out.push_back(std::move(p));
  }
  return out;
}

// Concatenates tables (a spec made of sections).
template <class Spec>
table<Spec> join(std::initializer_list<table<Spec>> parts) {
  table<Spec> out;
  for (const auto& t : parts) out.insert(out.end(), t.begin(), t.end());
  return out;
}

// A parameter bound to one spec object: what code that does not know the spec's type (a device
// kind's settings, models/device/device_kind.h) reads, writes and documents.
struct bound {
  const declaration* decl;
  std::function<value()> get;
  std::function<void(const value&)> set;
};

template <class Spec>
std::vector<bound> bind(const table<Spec>& t, Spec& s) {
  std::vector<bound> out;
  for (const auto& p : t)
    out.push_back({&p, [&p, &s] { return p.get(s); }, [&p, &s](const value& v) { p.set(s, v); }});
  return out;
}

// Read-only: `set` is empty.
template <class Spec>
std::vector<bound> bind(const table<Spec>& t, const Spec& s) {
  std::vector<bound> out;
  for (const auto& p : t) out.push_back({&p, [&p, &s] { return p.get(s); }, {}});
  return out;
}

}  // namespace p2psim::params
