#include "sim/config/overrides.h"

#include <fmt/format.h>

#include <algorithm>

namespace p2psim::config {
namespace {

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 10 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

[[noreturn]] void fail(const override_spec& spec, const std::string& message) {
  throw error(spec.origin(), "", message);
}

YAML::Node make_value(const override_spec& spec) {
  const std::string& v = spec.value;
  if (!v.empty() && (v.front() == '[' || v.front() == '{')) {
    try {
      return YAML::Load(v);
    } catch (const YAML::Exception& e) {
      fail(spec, fmt::format("value '{}' is not a valid YAML flow list or map: {}", v, e.msg));
    }
  }
  return YAML::Node(v);
}

// The element of `seq` named `segment` (by `field`, else by index), or -1.
long select(const YAML::Node& seq, const std::string& field, const std::string& segment) {
  for (size_t i = 0; i < seq.size(); ++i) {
    const YAML::Node item = seq[i];
    if (!item.IsMap()) continue;
    const YAML::Node id = item[field];
    if (id && id.IsScalar() && id.Scalar() == segment) return long(i);
  }
  if (is_index(segment) && std::stoul(segment) < seq.size()) return long(std::stoul(segment));
  return -1;
}

std::string names_in(const YAML::Node& seq, const std::string& field) {
  std::string out;
  for (size_t i = 0; i < seq.size(); ++i) {
    const YAML::Node item = seq[i];
    if (!item.IsMap()) continue;
    const YAML::Node id = item[field];
    if (id && id.IsScalar()) out += (out.empty() ? "" : ", ") + id.Scalar();
  }
  return out;
}

}  // namespace

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    out.emplace_back(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

override_spec parse_override(std::string_view text) {
  override_spec spec;
  spec.text = std::string(text);
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) fail(spec, "expected key=value, e.g. link.gpu0.gen=4");
  spec.path = std::string(text.substr(0, eq));
  spec.value = std::string(text.substr(eq + 1));
  if (spec.path.empty()) fail(spec, "the key before '=' is empty");
  for (const auto& seg : split_path(spec.path))
    if (seg.empty()) fail(spec, fmt::format("key '{}' has an empty segment", spec.path));
  return spec;
}

void apply_override(document& doc, const override_spec& spec, const override_rules& rules) {
  std::vector<std::string> segs = split_path(spec.path);
  if (auto r = rules.roots.find(segs[0]); r != rules.roots.end()) segs[0] = r->second;
  YAML::Node& root = doc.tree();
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) fail(spec, "the file's top level is not a map");

  // yaml-cpp's Node::operator= writes through to the referenced node; rebind with reset().
  YAML::Node cur;
  cur.reset(root);
  std::string where = "the top level";  // for messages: what `cur` is
  std::string list_field = "name";
  for (size_t i = 0; i < segs.size(); ++i) {
    const std::string& seg = segs[i];
    const bool last = i + 1 == segs.size();
    if (cur.IsMap()) {
      if (last) {
        cur[seg] = make_value(spec);
        doc.mark_origin(cur[seg], spec.origin());
        return;
      }
      auto list = rules.list_keys.find(seg);
      YAML::Node next = cur[seg];
      if (!next.IsDefined() || next.IsNull()) {
        if (list != rules.list_keys.end())
          fail(spec, fmt::format("no '{}' list, so nothing is named '{}'", seg, segs[i + 1]));
        cur[seg] = YAML::Node(YAML::NodeType::Map);
        doc.mark_origin(cur[seg], spec.origin());
        next.reset(cur[seg]);
      }
      list_field = list != rules.list_keys.end() ? list->second : "name";
      where = "'" + seg + "'";
      cur.reset(next);
    } else if (cur.IsSequence()) {
      long idx = select(cur, list_field, seg);
      if (idx < 0) {
        std::string have = names_in(cur, list_field);
        fail(spec, fmt::format("no element of {} has {} '{}'{}", where, list_field, seg,
                               have.empty() ? "" : " (have: " + have + ")"));
      }
      if (last) {
        if (!cur[size_t(idx)].IsScalar())
          fail(spec,
               fmt::format("'{}' selects a whole element of {}; name a key inside it", seg, where));
        cur[size_t(idx)] = make_value(spec);
        doc.mark_origin(cur[size_t(idx)], spec.origin());
        return;
      }
      YAML::Node next = cur[size_t(idx)];
      where = "'" + seg + "'";
      list_field = "name";
      cur.reset(next);
    } else {
      fail(spec, fmt::format("{} holds a value, not a map, so it has no key '{}'", where, seg));
    }
  }
}

}  // namespace p2psim::config
