#include "sim/config/reader.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/config/reader_detail.h"
#include "sim/config/text.h"

namespace p2psim::config {

namespace detail {

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return fmt::format("'{}'", n.Scalar());
    default:
      return "nothing";
  }
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string join(std::initializer_list<const char*> items) {
  return join(std::vector<std::string>(items.begin(), items.end()));
}

}  // namespace detail

namespace {

using detail::describe;
using detail::join;

// Edit distance, for "did you mean" hints on misspelt keys.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

// ---- document ----------------------------------------------------------------------------

document document::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw error({path, 0, 0}, "", "no such file");
  if (fs::is_directory(path, ec))
    throw error({path, 0, 0}, "", "is a directory, expected a YAML file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw error({path, 0, 0}, "", "cannot read the file");
  return parse(text.str(), path);
}

document document::parse(const std::string& text, const std::string& name) {
  auto state = std::make_shared<detail::doc_state>();
  state->file = name;
  check_text(text, name, "YAML");
  try {
    state->tree = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own message is "bad file"; say what is wrong with it.
    throw error({name, e.mark.line + 1, e.mark.column + 1}, "",
                fmt::format("YAML syntax error: lists and maps nested too deeply (the parser "
                            "stops at {} levels)",
                            e.depth()));
  } catch (const YAML::Exception& e) {
    source_loc where{name, 0, 0};
    if (!e.mark.is_null()) where = {name, e.mark.line + 1, e.mark.column + 1};
    throw error(where, "", "YAML syntax error: " + e.msg);
  }
  return document(std::move(state));
}

node_reader document::root() const {
  const YAML::Node& t = m_state->tree;
  // Whole-file problems still get a line: the start of the file, or where the value begins.
  if (!t.IsDefined() || t.IsNull())
    throw error({m_state->file, 1, 1}, "", "the file is empty; expected a map of keys");
  if (!t.IsMap()) {
    const YAML::Mark m = t.Mark();
    throw error({m_state->file, m.is_null() ? 1 : m.line + 1, m.is_null() ? 1 : m.column + 1}, "",
                fmt::format("expected a map of keys at the top level, got {}", describe(t)));
  }
  return node_reader(m_state, t, {m_state->file, 1, 1});
}

YAML::Node& document::tree() {
  return m_state->tree;
}
const std::string& document::file() const {
  return m_state->file;
}

void document::mark_origin(const YAML::Node& node, const source_loc& origin) {
  m_state->origins.emplace_back(node, origin);
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      mark_origin(it->first, origin);
      mark_origin(it->second, origin);
    }
  } else if (node.IsSequence()) {
    for (const auto& child : node) mark_origin(child, origin);
  }
}

// ---- node_reader: structure --------------------------------------------------------------

node_reader::node_reader(std::shared_ptr<const detail::doc_state> doc, YAML::Node map,
                         source_loc where)
    : m_doc(std::move(doc)), m_node(map), m_loc(std::move(where)) {
  m_shared = std::make_shared<shared>();
  for (auto it = m_node.begin(); it != m_node.end(); ++it) {
    if (!it->first.IsScalar())
      throw error(loc_of(it->first, m_loc), "",
                  fmt::format("a key must be a plain name, got {}", describe(it->first)));
    std::string key = it->first.Scalar();
    // yaml-cpp keeps both pairs of a duplicated key and returns the first; reject instead.
    for (const auto& e : m_shared->entries)
      if (e.key == key) {
        source_loc first = loc_of(e.key_node, m_loc);
        throw error(loc_of(it->first, m_loc), key,
                    first.line ? fmt::format("duplicate key (first defined at line {}, column {})",
                                             first.line, first.column)
                               : "duplicate key");
      }
    m_shared->entries.push_back({key, it->first, it->second});
  }
  m_shared->consumed.assign(m_shared->entries.size(), false);
}

source_loc node_reader::loc_of(const YAML::Node& n, const source_loc& fallback) const {
  for (const auto& [node, origin] : m_doc->origins)
    if (node.is(n)) return origin;
  const YAML::Mark m = n.Mark();
  if (m.is_null()) return fallback;
  return {m_doc->file, m.line + 1, m.column + 1};
}

source_loc node_reader::loc() const {
  return m_loc;
}

source_loc node_reader::key_loc(const std::string& key) const {
  const entry* e = lookup(key);
  if (!e) return m_loc;
  // A key made by an override has no mark; its value carries the override's origin.
  return loc_of(e->key_node, loc_of(e->value, m_loc));
}

source_loc node_reader::loc(const std::string& key) const {
  const entry* e = lookup(key);
  if (!e) return m_loc;
  source_loc k = key_loc(key);
  source_loc v = loc_of(e->value, k);
  // yaml-cpp marks an empty value at the start of the next line: point at the key instead
  // (unless an override made it, which has no line).
  if (e->value.IsNull() && v.line != 0) return k;
  return v;
}

const node_reader::entry* node_reader::lookup(const std::string& key) const {
  for (const auto& e : m_shared->entries)
    if (e.key == key) return &e;
  return nullptr;
}

const node_reader::entry* node_reader::find(const std::string& key) const {
  auto& known = m_shared->known;
  if (std::find(known.begin(), known.end(), key) == known.end()) known.push_back(key);
  return lookup(key);
}

const node_reader::entry* node_reader::take(const std::string& key) const {
  const entry* e = find(key);
  if (e) m_shared->consumed[size_t(e - m_shared->entries.data())] = true;
  return e;
}

const node_reader::entry& node_reader::required(const std::string& key) const {
  const entry* e = take(key);
  if (!e) fail(key, "missing required key");
  return *e;
}

bool node_reader::has(const std::string& key) const {
  return find(key) != nullptr;
}

std::vector<std::string> node_reader::keys() const {
  std::vector<std::string> out;
  for (const auto& e : m_shared->entries) out.push_back(e.key);
  return out;
}

void node_reader::fail(const std::string& key, const std::string& message) const {
  throw error(loc(key), key, message);
}

void node_reader::fail(const std::string& message) const {
  throw error(m_loc, "", message);
}

void node_reader::done() const {
  const auto& s = *m_shared;
  for (size_t i = 0; i < s.entries.size(); ++i) {
    if (s.consumed[i]) continue;
    const std::string& key = s.entries[i].key;
    std::string msg =
        s.known.empty() ? fmt::format("unknown key '{}' (this map takes no keys)", key)
                        : fmt::format("unknown key '{}' (expected one of: {})", key, join(s.known));
    std::string best;
    size_t best_d = 3;  // only suggest close matches
    for (const auto& k : s.known) {
      size_t d = distance(key, k);
      if (d < best_d) best_d = d, best = k;
    }
    if (!best.empty()) msg += fmt::format("; did you mean '{}'?", best);
    throw error(key_loc(key), "", msg);
  }
}

node_reader node_reader::make_child(const YAML::Node& map, const source_loc& where,
                                    const std::string& key) const {
  if (!map.IsMap()) throw error(where, key, fmt::format("expected a map, got {}", describe(map)));
  return node_reader(m_doc, map, where);
}

node_reader node_reader::child(const std::string& key) const {
  const entry& e = required(key);
  return make_child(e.value, loc(key), key);
}

std::optional<node_reader> node_reader::optional_child(const std::string& key) const {
  const entry* e = take(key);
  if (!e) return std::nullopt;
  if (e->value.IsNull()) return node_reader(m_doc, YAML::Node(YAML::NodeType::Map), loc(key));
  return make_child(e->value, loc(key), key);
}

std::vector<node_reader> node_reader::list(const std::string& key) const {
  const entry& e = required(key);
  if (!e.value.IsSequence())
    fail(key, fmt::format("expected a list of maps, got {}", describe(e.value)));
  std::vector<node_reader> out;
  size_t i = 0;
  for (const auto& item : e.value) {
    out.push_back(make_child(item, loc_of(item, loc(key)), fmt::format("{}[{}]", key, i)));
    ++i;
  }
  return out;
}

std::vector<node_reader> node_reader::optional_list(const std::string& key) const {
  const entry* e = find(key);
  if (!e) return {};
  if (e->value.IsNull()) {
    take(key);
    return {};
  }
  return list(key);
}

std::vector<std::string> node_reader::string_list(const std::string& key) const {
  const entry& e = required(key);
  if (!e.value.IsSequence())
    fail(key, fmt::format("expected a list of names such as [a, b], got {}", describe(e.value)));
  std::vector<std::string> out;
  for (const auto& item : e.value) {
    if (!item.IsScalar())
      throw error(loc_of(item, loc(key)), key,
                  fmt::format("expected a list of names, got {} as an element", describe(item)));
    out.push_back(item.Scalar());
  }
  return out;
}

YAML::Node node_reader::raw(const std::string& key) const {
  return required(key).value;
}
const YAML::Node& node_reader::node() const {
  return m_node;
}

void reject_unknown(const node_reader& r, std::initializer_list<const char*> known) {
  for (const auto& k : r.keys()) {
    bool ok = false;
    for (const char* n : known) ok |= k == n;
    if (!ok) {
      std::string list;
      for (const char* n : known) list += std::string(list.empty() ? "" : ", ") + n;
      r.fail(k, "unknown key '" + k + "' (expected one of: " + list + ")");
    }
  }
}

}  // namespace p2psim::config
