// A strict reader over a YAML document: typed getters with units, errors with file:line:col and
// the key, duplicate-key detection, and unknown-key detection (done()). Used for topology files,
// platform presets and scenario files.
//
//   config::document doc = config::document::load(path);
//   config::node_reader r = doc.root();
//   int gen = int(r.integer("gen", 1, 5, 3));
//   for (const auto& d : r.optional_list("devices")) { ...; d.done(); }
//   r.done();  // "unknown key 'gne' (expected one of: gen, devices)"
//
// Every getter records its key as known, and as consumed when present; done() reports the first
// present key that nothing consumed. Getters with a default return it when the key is absent; a
// key that is present with no value ("key:") is an error, except for optional maps and lists.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/error.h"
#include "sim/config/source_loc.h"

namespace p2psim::config {

namespace detail {
struct doc_state;
}
class node_reader;

// Owns a YAML tree and its file name. A handle: copies share the tree.
class document {
 public:
  // A missing or unreadable file, a YAML syntax error, or binary garbage -> config::error.
  static document load(const std::string& path);
  // `name` stands for the file name in error messages (and its directory for relative lookups).
  static document parse(const std::string& text, const std::string& name);

  node_reader root() const;  // the top-level map; anything else (also empty) is an error
  YAML::Node& tree();        // for overrides; see mark_origin
  const std::string& file() const;

  // Records that `node` and everything below it were set by `origin` (e.g. "--set a.b=c"):
  // errors about them print that as their location, as code-made nodes have no line.
  void mark_origin(const YAML::Node& node, const source_loc& origin);

 private:
  explicit document(std::shared_ptr<detail::doc_state> state) : m_state(std::move(state)) {}
  std::shared_ptr<detail::doc_state> m_state;
};

// A YAML map being read. Copies share the record of consumed keys.
class node_reader {
 public:
  source_loc loc() const;                            // of the map itself
  source_loc loc(const std::string& key) const;      // of the key's value (the map's, if absent)
  source_loc key_loc(const std::string& key) const;  // of the key itself

  bool has(const std::string& key) const;
  std::vector<std::string> keys() const;  // present keys in file order; consumes nothing

  node_reader child(const std::string& key) const;  // required map
  std::optional<node_reader> optional_child(const std::string& key) const;
  std::vector<node_reader> list(const std::string& key) const;  // required sequence of maps
  std::vector<node_reader> optional_list(const std::string& key) const;
  std::vector<std::string> string_list(const std::string& key) const;  // sequence of scalars

  std::string str(const std::string& key) const;
  std::string str(const std::string& key, const std::string& def) const;
  int64_t integer(const std::string& key, int64_t min, int64_t max) const;
  int64_t integer(const std::string& key, int64_t min, int64_t max, int64_t def) const;
  double number(const std::string& key, double min, double max) const;
  double number(const std::string& key, double min, double max, double def) const;
  bool boolean(const std::string& key) const;
  bool boolean(const std::string& key, bool def) const;
  uint64_t size(const std::string& key) const;  // units: see units.h
  uint64_t size(const std::string& key, uint64_t def) const;
  double time_ns(const std::string& key) const;
  double time_ns(const std::string& key, double def) const;
  double bandwidth_gbs(const std::string& key) const;
  double bandwidth_gbs(const std::string& key, double def) const;
  uint64_t address(const std::string& key) const;
  std::optional<uint64_t> optional_address(const std::string& key) const;
  std::string choice(const std::string& key, std::initializer_list<const char*> allowed) const;
  std::string choice(const std::string& key, std::initializer_list<const char*> allowed,
                     const std::string& def) const;
  std::string choice(const std::string& key, const std::vector<std::string>& allowed) const;
  std::string choice(const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& def) const;

  // The raw value (consumes the key), for shapes the getters do not cover.
  YAML::Node raw(const std::string& key) const;
  const YAML::Node& node() const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail(const std::string& message) const;  // at the map itself

  // The first present key that no getter consumed -> "unknown key 'gne' (expected one of: ...)"
  // at that key's line:col.
  void done() const;

 private:
  friend class document;
  struct entry {
    std::string key;
    YAML::Node key_node, value;
  };
  struct shared {
    std::vector<entry> entries;      // in file order
    std::vector<std::string> known;  // keys asked for, in the order asked
    std::vector<bool> consumed;      // per entry
  };

  node_reader(std::shared_ptr<const detail::doc_state> doc, YAML::Node map, source_loc where);
  const entry* lookup(const std::string& key) const;  // records nothing
  const entry* find(const std::string& key) const;    // records the key as known
  const entry* take(const std::string& key) const;    // find + consume
  const entry& required(const std::string& key) const;
  std::string scalar(const entry& e, const char* expected) const;
  template <class T>
  T with_units(const std::string& key, T (*parser)(std::string_view), const char* what) const;
  node_reader make_child(const YAML::Node& map, const source_loc& where,
                         const std::string& key) const;
  source_loc loc_of(const YAML::Node& n, const source_loc& fallback) const;

  std::shared_ptr<const detail::doc_state> m_doc;
  YAML::Node m_node;
  source_loc m_loc;
  std::shared_ptr<shared> m_shared;
};

// Reports the first present key of `r` not in `known` ("unknown key 'x' (expected one of: ...)")
// before anything else is read, so a typo is named as such rather than as the required key it
// was meant to be.
void reject_unknown(const node_reader& r, std::initializer_list<const char*> known);

}  // namespace p2psim::config
