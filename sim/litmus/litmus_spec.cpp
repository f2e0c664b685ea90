#include "sim/litmus/litmus_spec.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "sim/config/error.h"
#include "sim/config/reader.h"

namespace p2psim::litmus {

namespace fs = std::filesystem;

const char* to_string(agent_kind k) {
  switch (k) {
    case agent_kind::dma:
      return "dma";
    case agent_kind::kernel:
      return "kernel";
    case agent_kind::cpu:
      break;
  }
  return "cpu";
}

const char* to_string(expectation e) {
  switch (e) {
    case expectation::forbidden:
      return "forbidden";
    case expectation::allowed:
      return "allowed";
    case expectation::required:
      break;
  }
  return "required";
}

const char* to_string(variant v) {
  return v == variant::ro ? "RO" : "IDO";
}

const location_spec* litmus_spec::find_location(const std::string& n) const {
  for (const auto& l : locations)
    if (l.name == n) return &l;
  return nullptr;
}

const agent_spec* litmus_spec::find_agent(const std::string& n) const {
  for (const auto& a : agents)
    if (a.name == n) return &a;
  return nullptr;
}

std::string outcome_key(const litmus_spec& t, const std::map<std::string, value>& values) {
  std::string s;
  auto add = [&](const std::string& n) {
    auto it = values.find(n);
    if (it == values.end()) return;
    if (!s.empty()) s += ' ';
    s += n;
    s += '=';
    s += it->second.str();
  };
  for (const auto& r : t.registers()) add(r);
  for (const auto& l : t.locations) add(l.name);
  return s;
}

std::vector<std::string> litmus_spec::registers() const {
  std::vector<std::string> out;
  for (const auto& a : agents)
    for (const auto& o : a.program)
      if (!o.reg.empty()) out.push_back(o.reg);
  return out;
}

namespace {

using config::reject_unknown;

bool valid_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

location_spec read_location(const config::node_reader& r, const std::string& name) {
  reject_unknown(r, {"memory", "offset", "size", "init", "sync_memops"});
  location_spec l;
  l.name = name;
  l.loc = r.loc();
  l.memory = r.str("memory");
  l.offset = r.size("offset", 0);
  l.size = r.size("size", 8);
  if (l.size == 0 || l.size > (1u << 20)) r.fail("size", "a location holds 1 byte to 1MiB");
  if (l.offset > (1ull << 40)) r.fail("offset", "must be below 1TiB");
  if (r.has("init") && r.node()["init"].IsScalar() && r.node()["init"].Scalar() == "ramp") {
    r.raw("init");
    l.ramp = true;
  } else {
    l.init = uint64_t(r.integer("init", 0, INT64_MAX, 0));
  }
  l.sync_memops = r.boolean("sync_memops", false);
  r.done();
  return l;
}

constexpr const char* verbs[] = {"write",  "read", "await",      "fence", "sleep",
                                 "launch", "sync", "flush",      "copy",  "fetch_add",
                                 "swap",   "cas",  "flush_cache"};

op_spec read_op(const config::node_reader& r) {
  op_spec o;
  o.loc = r.loc();
  std::string verb;
  for (const char* v : verbs)
    if (r.has(v)) {
      if (!verb.empty()) r.fail(v, "one operation per step: both '" + verb + "' and '" + v + "'");
      verb = v;
    }
  if (verb.empty())
    r.fail(
        "a step needs one of: write, read, await, fence, sleep, launch, sync, flush, copy, "
        "fetch_add, swap, cas, flush_cache");
  auto attrs = [&] {
    o.sets_attributes = r.has("relaxed_ordering") || r.has("id_based_ordering");
    o.relaxed_ordering = r.boolean("relaxed_ordering", false);
    o.id_based_ordering = r.boolean("id_based_ordering", false);
    o.traffic_class = int(r.integer("traffic_class", 0, 7, 0));
  };
  if (verb == "write") {
    reject_unknown(r, {"write", "value", "relaxed_ordering", "id_based_ordering", "no_snoop",
                       "traffic_class"});
    o.kind = op_kind::write;
    o.location = r.str("write");
    o.value = uint64_t(r.integer("value", 0, INT64_MAX));
    attrs();
    o.no_snoop = r.boolean("no_snoop", false);
  } else if (verb == "read") {
    reject_unknown(r, {"read", "to", "into", "relaxed_ordering", "id_based_ordering", "no_snoop",
                       "traffic_class"});
    o.no_snoop = r.boolean("no_snoop", false);
    o.kind = op_kind::read;
    o.location = r.str("read");
    if (r.has("to") == r.has("into"))
      r.fail("read", "a read needs one of 'to: REGISTER' or 'into: LOCATION'");
    o.reg = r.str("to", "");
    o.into = r.str("into", "");
    attrs();
  } else if (verb == "fetch_add" || verb == "swap" || verb == "cas") {
    reject_unknown(r, {verb.c_str(), "value", "compare", "to", "relaxed_ordering",
                       "id_based_ordering", "traffic_class"});
    o.kind = op_kind::atomic;
    o.atomic = verb == "fetch_add" ? atomic_op::fetch_add
               : verb == "swap"    ? atomic_op::swap
                                   : atomic_op::cas;
    o.location = r.str(verb);
    o.value = uint64_t(r.integer("value", 0, INT64_MAX));
    if (verb == "cas")
      o.compare = uint64_t(r.integer("compare", 0, INT64_MAX));
    else if (r.has("compare"))
      r.fail("compare", "only cas compares");
    o.reg = r.str("to", "");
    attrs();
  } else if (verb == "await") {
    reject_unknown(r, {"await", "value", "to", "poll", "timeout"});
    o.kind = op_kind::await;
    o.location = r.str("await");
    o.value = uint64_t(r.integer("value", 0, INT64_MAX));
    o.reg = r.str("to", "");
    o.poll_ns = r.time_ns("poll", o.poll_ns);
    o.timeout_ns = r.time_ns("timeout", o.timeout_ns);
    if (o.poll_ns < 1) r.fail("poll", "must be at least 1ns");
    if (o.timeout_ns > 1e7) r.fail("timeout", "must be at most 10ms");
  } else if (verb == "fence" || verb == "sync") {
    reject_unknown(r, {verb.c_str()});
    o.kind = verb == "fence" ? op_kind::fence : op_kind::sync;
    if (!r.boolean(verb)) r.fail(verb, "write '" + verb + ": true' (or leave the step out)");
  } else if (verb == "sleep") {
    reject_unknown(r, {"sleep"});
    o.kind = op_kind::sleep;
    o.time_ns = r.time_ns("sleep");
    if (o.time_ns > 1e7) r.fail("sleep", "must be at most 10ms");
  } else if (verb == "launch") {
    reject_unknown(r, {"launch"});
    o.kind = op_kind::launch;
    o.agent = r.str("launch");
  } else if (verb == "flush_cache") {
    reject_unknown(r, {"flush_cache"});
    o.kind = op_kind::flush_cache;
    o.location = r.str("flush_cache");
  } else if (verb == "flush") {
    reject_unknown(r, {"flush"});
    o.kind = op_kind::flush;
    o.scope = r.choice("flush", {"owner", "all_devices"});
  } else {
    reject_unknown(r, {"copy", "to", "async"});
    o.kind = op_kind::copy;
    o.location = r.str("copy");
    o.to = r.str("to");
    o.async = r.boolean("async", false);
  }
  r.done();
  return o;
}

agent_spec read_agent(const config::node_reader& r) {
  reject_unknown(r, {"name", "kind", "device", "context", "start", "program"});
  agent_spec a;
  a.loc = r.loc();
  a.name = r.str("name");
  if (!valid_name(a.name)) r.fail("name", "'" + a.name + "' is not a name (letters, digits, _)");
  std::string k = r.choice("kind", {"dma", "kernel", "cpu"});
  a.kind = k == "dma" ? agent_kind::dma : k == "kernel" ? agent_kind::kernel : agent_kind::cpu;
  a.device = r.str("device");
  a.context = r.str("context", "");
  if (!a.context.empty() && a.kind != agent_kind::cpu)
    r.fail("context", "only a cpu agent has a CUDA context");
  a.launched = r.choice("start", {"begin", "launch"}, "begin") == "launch";
  for (const auto& s : r.list("program")) a.program.push_back(read_op(s));
  if (a.program.empty()) r.fail("program", "an agent needs at least one step");
  r.done();
  return a;
}

// The rules that need only the file: names resolve, each kind does what it can.
void check_names(const litmus_spec& t, const config::node_reader& root) {
  std::map<std::string, const op_spec*> writers;
  for (const auto& a : t.agents) {
    for (const auto& o : a.program) {
      auto bad = [&](const std::string& msg) { throw config::error(o.loc, "program", msg); };
      auto need_location = [&](const std::string& n) -> const location_spec& {
        const location_spec* l = t.find_location(n);
        if (!l) bad("no location named '" + n + "'");
        return *l;
      };
      switch (o.kind) {
        case op_kind::write:
        case op_kind::read:
        case op_kind::await:
          need_location(o.location);
          if (a.kind == agent_kind::dma && o.kind == op_kind::await &&
              need_location(o.location).memory != a.device)
            bad("a DMA agent awaits only its own memory (" + a.device + ")");
          if (!o.into.empty()) {
            const auto& from = need_location(o.location);
            const auto& to = need_location(o.into);
            if (a.kind != agent_kind::dma) bad("into: only a DMA agent reads into its memory");
            if (to.memory != a.device)
              bad("into: " + to.name + " is not in the agent's own memory (" + a.device + ")");
            if (from.memory == a.device) bad("into: " + from.name + " is the agent's own memory");
            if (from.size != to.size) bad("into: the locations differ in size");
          }
          break;
        case op_kind::fence:
          if (a.kind != agent_kind::dma) bad("fence is a DMA agent's step");
          break;
        case op_kind::atomic: {
          const auto& l = need_location(o.location);
          if (a.kind != agent_kind::dma) bad("an AtomicOp is a DMA agent's PCIe request");
          if (l.memory == a.device)
            bad("an AtomicOp goes over the fabric: " + l.name + " is the agent's own memory");
          if (l.size != 4 && l.size != 8) bad("an AtomicOp's location holds 4 or 8 bytes");
          if (l.offset % l.size) bad("an AtomicOp's location is aligned to its size");
          break;
        }
        case op_kind::sleep:
          break;
        case op_kind::flush_cache:
          need_location(o.location);
          if (a.kind != agent_kind::cpu) bad("flush_cache is a cpu agent's step");
          break;
        case op_kind::launch: {
          if (a.kind != agent_kind::cpu) bad("only a cpu agent launches");
          const agent_spec* b = t.find_agent(o.agent);
          if (!b) bad("no agent named '" + o.agent + "'");
          if (!b->launched)
            bad("agent '" + o.agent + "' starts at the beginning: give it start: launch");
          if (b->kind == agent_kind::cpu) bad("a cpu agent is not launched");
          break;
        }
        case op_kind::sync:
        case op_kind::flush:
        case op_kind::copy:
          if (a.kind != agent_kind::cpu) bad("only a cpu agent calls CUDA");
          if (a.context.empty()) bad("the agent needs `context: GPU` for CUDA calls");
          if (o.kind == op_kind::copy) {
            const auto& from = need_location(o.location);
            const auto& to = need_location(o.to);
            if (from.size != to.size) bad("copy: the locations differ in size");
          }
          break;
      }
      if (!o.reg.empty()) {
        if (!valid_name(o.reg)) bad("'" + o.reg + "' is not a register name");
        if (t.find_location(o.reg)) bad("register '" + o.reg + "' has a location's name");
        if (writers.count(o.reg))
          bad("register '" + o.reg + "' is already written at " + writers[o.reg]->loc.str());
        writers[o.reg] = &o;
      }
    }
  }
  for (const auto& n : t.cond.names())
    if (!t.find_location(n) && !writers.count(n))
      root.fail("condition", "'" + n + "' is neither a register nor a location");
}

}  // namespace

litmus_spec load_litmus(const std::string& path) {
  config::document doc = config::document::load(path);
  config::node_reader r = doc.root();
  reject_unknown(r, {"name", "description", "spec", "timing", "unreached", "topology", "set",
                     "locations", "agents", "condition", "expect", "runs", "variants", "also_on"});
  litmus_spec t;
  t.file = path;
  t.loc = r.loc();
  t.name = r.str("name", fs::path(path).stem().string());
  t.description = r.str("description", "");
  t.spec = r.str("spec", "");
  t.timing = r.str("timing", "");
  auto topology_file = [&](const std::string& given, const char* key) {
    fs::path topo(given);
    if (!topo.is_absolute()) topo = fs::path(path).parent_path() / topo;
    std::string file = topo.lexically_normal().string();
    std::error_code ec;  // a name the file system cannot take (too long, say) is no file either
    if (!fs::is_regular_file(file, ec)) r.fail(key, "no topology file " + file);
    return file;
  };
  t.topology = topology_file(r.str("topology"), "topology");
  if (r.has("also_on"))
    for (const auto& more : r.string_list("also_on")) {
      t.also_on.push_back(topology_file(more, "also_on"));
      const std::string stem = fs::path(t.also_on.back()).stem().string();
      for (size_t i = 0; i + 1 < t.also_on.size(); ++i)
        if (fs::path(t.also_on[i]).stem() == stem)
          r.fail("also_on",
                 "two topologies named '" + stem + "' (the tests' names tell them apart by it)");
      if (fs::path(t.topology).stem() == stem)
        r.fail("also_on", "'" + stem + "' is the test's own topology");
    }
  const std::vector<std::string> sets =
      r.has("set") ? r.string_list("set") : std::vector<std::string>{};
  for (size_t i = 0; i < sets.size(); ++i) {
    try {
      t.topology_sets.push_back(config::parse_override(sets[i]));
    } catch (const config::error& e) {
      r.fail("set", e.message);
    }
    // Errors about the topology this override makes name the item here, not a "--set".
    const YAML::Mark m = r.node()["set"][i].Mark();
    t.topology_sets.back().from =
        m.is_null() ? r.loc("set") : config::source_loc{path, m.line + 1, m.column + 1};
  }
  auto locs = r.child("locations");
  for (const auto& k : locs.keys()) {
    if (!valid_name(k)) locs.fail(k, "'" + k + "' is not a name (letters, digits, _)");
    t.locations.push_back(read_location(locs.child(k), k));
  }
  if (t.locations.empty()) locs.fail("name at least one location");
  std::set<std::string> names;
  for (const auto& a : r.list("agents")) {
    t.agents.push_back(read_agent(a));
    if (!names.insert(t.agents.back().name).second)
      a.fail("name", "duplicate agent name '" + t.agents.back().name + "'");
  }
  // Without agents nothing runs, and a condition on initial values would pass vacuously.
  if (t.agents.empty()) r.fail("agents", "name at least one agent");
  try {
    t.cond = condition::parse(r.str("condition"));
  } catch (const std::invalid_argument& e) {
    r.fail("condition", e.what());
  }
  if (r.has("unreached"))
    for (const auto& u : r.list("unreached")) {
      reject_unknown(u, {"when", "why", "on"});
      unreached_spec x;
      x.loc = u.loc();
      try {
        x.when = condition::parse(u.str("when"));
      } catch (const std::invalid_argument& e) {
        u.fail("when", e.what());
      }
      const std::vector<std::string> regs = t.registers();
      for (const auto& n : x.when.names())
        if (!t.find_location(n) && std::find(regs.begin(), regs.end(), n) == regs.end())
          u.fail("when", "'" + n + "' is neither a register nor a location");
      x.why = u.str("why");
      if (x.why.empty()) u.fail("why", "say why the runs cannot reach these outcomes");
      if (u.has("on")) x.on = u.string_list("on");
      for (const auto& stem : x.on) {
        bool known = fs::path(t.topology).stem() == stem;
        for (const auto& more : t.also_on) known |= fs::path(more).stem() == stem;
        if (!known)
          u.fail("on",
                 "'" + stem + "' is not the stem of the test's topology or of one of `also_on`");
      }
      t.unreached.push_back(std::move(x));
    }
  std::string e = r.choice("expect", {"forbidden", "allowed", "required"});
  t.expect = e == "forbidden" ? expectation::forbidden
             : e == "allowed" ? expectation::allowed
                              : expectation::required;
  t.runs = int(r.integer("runs", 1, 1000000, 0));
  if (r.has("variants")) {
    for (const auto& v : r.string_list("variants")) {
      if (v != "RO" && v != "IDO") r.fail("variants", "a variant is RO or IDO, not '" + v + "'");
      variant x = v == "RO" ? variant::ro : variant::ido;
      if (std::find(t.variants.begin(), t.variants.end(), x) != t.variants.end())
        r.fail("variants", "variant " + v + " is listed twice");
      t.variants.push_back(x);
    }
  }
  r.done();
  check_names(t, r);
  return t;
}

std::vector<litmus_spec> with_variants(const litmus_spec& t) {
  std::vector<litmus_spec> out{t};
  out.front().variants.clear();
  out.front().also_on.clear();
  for (variant v : t.variants) {
    litmus_spec c = out.front();
    c.name += std::string("+") + to_string(v);
    for (auto& a : c.agents) {
      if (a.kind != agent_kind::dma) continue;
      for (auto& o : a.program) {
        const bool request =
            o.kind == op_kind::write || o.kind == op_kind::read || o.kind == op_kind::atomic;
        const location_spec* l = c.find_location(o.location);
        if (!request || o.sets_attributes || !l || l->memory == a.device) continue;
        (v == variant::ro ? o.relaxed_ordering : o.id_based_ordering) = true;
      }
    }
    out.push_back(std::move(c));
  }
  const size_t on_own = out.size();
  for (const auto& topology : t.also_on)
    for (size_t i = 0; i < on_own; ++i) {
      litmus_spec c = out[i];
      c.topology = topology;
      c.name += '@';
      c.name += fs::path(topology).stem().string();
      out.push_back(std::move(c));
    }
  return out;
}

}  // namespace p2psim::litmus
