#include "sim/litmus/reference/machine.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "models/gpu/gpu_spec.h"

namespace p2psim::litmus::reference {

namespace {

template <class T>
void put(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_words(std::string& s, const words& w) {  // as runs of equal words
  put(s, uint32_t(w.size()));
  for (size_t i = 0; i < w.size();) {
    size_t j = i + 1;
    while (j < w.size() && w[j] == w[i]) ++j;
    put(s, uint32_t(j - i));
    put(s, w[i]);
    i = j;
  }
}
void put_tlp(std::string& s, const tlp& t) {
  put(s, uint8_t(t.ord.kind));
  put(s, uint8_t(t.ord.ro | t.ord.ido << 1 | t.ord.tc << 2));
  put(s, t.ord.requester);
  put(s, t.ord.request);
  put(s, t.agent);
  put(s, t.request);
  put(s, t.route);
  put(s, uint8_t(t.leg));
  put(s, uint8_t(t.hop));
  put(s, t.first);
  put(s, t.count);
  put(s, t.value);
  put(s, uint8_t(t.no_snoop));
  put_words(s, t.data);
}

}  // namespace

std::string state::encode() const {
  std::string s;
  for (const auto& a : agents) {
    put(s, a.pc);
    put(s, uint8_t(a.started));
    put(s, a.outstanding);
    put(s, a.posted_near);
    put(s, uint8_t(a.syncing));
  }
  for (const auto& r : registers) {
    put(s, uint8_t(r.kind));
    put(s, r.n);
  }
  for (const auto& m : memory) put_words(s, m);
  for (const auto& q : queues) {
    put(s, uint32_t(q.size()));
    for (const auto& t : q) put_tlp(s, t);
  }
  for (const auto& r : requests) {
    put(s, r.received);
    put(s, r.forwarded);
    put_words(s, r.data);
  }
  for (const auto& g : gathers) {
    put(s, g.pending);
    put_words(s, g.data);
  }
  put(s, uint32_t(proxy_held.size()));
  for (const auto& t : proxy_held) put_tlp(s, t);
  put(s, uint32_t(copies.size()));
  for (const auto& c : copies) {
    put(s, c.to);
    put_words(s, c.data);
    for (bool b : c.landed) s.push_back(b ? '1' : '0');
  }
  for (const auto& v : views) {
    put_words(s, v.seen);
    put(s, uint32_t(v.pending.size()));
    for (const auto& p : v.pending) {
      put(s, p.first);
      put(s, p.count);
      put(s, p.value);
      put(s, uint8_t(p.hidden));
    }
  }
  for (const auto& c : cache) {
    for (size_t i = 0; i < c.held.size(); ++i)
      s.push_back(char('0' + c.held[i] + 2 * c.undecided[i]));
    put_words(s, c.data);
  }
  return s;
}

machine::machine(const litmus_spec& test, const topo::topology& topo, rule_set rules, bool labels)
    : m_test(test), m_topo(topo), m_rules(std::move(rules)), m_labels(labels), m_fabric(topo) {
  m_registers = test.registers();
  m_rcb_words = std::max<uint32_t>(1, topo.pcie.rcb / 8);
  for (const auto& l : test.locations) {
    placed_location p;
    p.spec = &l;
    p.memory = l.memory;
    const auto* d = topo.find_device(l.memory);
    p.gpu = d && d->spec<gpu::gpu_spec>();
    p.words = uint32_t((l.size + 7) / 8);
    m_locations.push_back(p);
  }
  auto observe = [&](const std::string& name) {
    if (int i = location_index(name); i >= 0) m_locations[size_t(i)].observed = true;
  };
  for (const auto& n : test.cond.names()) observe(n);
  for (const auto& a : test.agents) {
    agent_info info;
    info.spec = &a;
    for (const auto& o : a.program) {
      int r = -1;
      if (o.kind == op_kind::read || o.kind == op_kind::await || o.kind == op_kind::atomic ||
          o.kind == op_kind::copy)
        observe(o.location);
      if (!o.into.empty()) observe(o.into);
      // What CPUs cache shows only where a write leaves a line stale.
      m_caches |= o.no_snoop || !m_rules.on("Host:snoop");
      const bool request =
          o.kind == op_kind::write || o.kind == op_kind::read || o.kind == op_kind::atomic;
      if (a.kind == agent_kind::dma && request &&
          test.find_location(o.location)->memory != a.device) {
        const tlp_kind k = o.kind == op_kind::write  ? tlp_kind::posted
                           : o.kind == op_kind::read ? tlp_kind::read
                                                     : tlp_kind::atomic;
        m_routes.push_back(m_fabric.request(a.device, test.find_location(o.location)->memory, k));
        r = int(m_routes.size()) - 1;
      }
      info.route.push_back(r);
    }
    m_agents.push_back(info);
  }
}

int machine::location_index(const std::string& name) const {
  for (size_t i = 0; i < m_locations.size(); ++i)
    if (m_locations[i].spec->name == name) return int(i);
  return -1;
}

int machine::register_index(const std::string& name) const {
  auto it = std::find(m_registers.begin(), m_registers.end(), name);
  return it == m_registers.end() ? -1 : int(it - m_registers.begin());
}

bool machine::covered(const std::string& memory_gpu, const std::string& observer) const {
  if (!m_rules.on("GPU:writes-ordering")) return false;
  const auto& o = m_topo.find_device(memory_gpu)->spec<gpu::gpu_spec>()->rdma_ordering;
  if (o == gpu::writes_ordering::all_devices) return true;
  return o == gpu::writes_ordering::owner && observer == memory_gpu;
}

state machine::initial() const {
  state s;
  for (const auto& a : m_agents) {
    agent_state st;
    st.started = !a.spec->launched;
    s.agents.push_back(st);
  }
  s.registers.assign(m_registers.size(), value{});
  s.queues.resize(m_fabric.queue_count());
  for (const auto& l : m_locations) {
    words w;
    if (l.observed) {
      w.resize(l.words);
      for (uint32_t i = 0; i < l.words; ++i) w[i] = l.spec->ramp ? i : l.spec->init;
    }
    s.memory.push_back(w);
  }
  if (m_caches)
    for (size_t i = 0; i < m_locations.size(); ++i) {
      const placed_location& l = m_locations[i];
      if (!l.observed || !m_topo.find_socket(l.memory)) {
        s.cache.emplace_back();
        continue;
      }
      const size_t lines = line_of(int(i), l.words - 1) + 1;
      s.cache.push_back(
          {std::vector<bool>(lines, false), std::vector<bool>(lines, false), words(l.words, 0)});
    }
  // Views for the kernels a GPU's ordering attribute does not cover.
  for (const auto& a : m_test.agents) {
    if (a.kind != agent_kind::kernel) continue;
    for (const auto& o : a.program) {
      const int loc = location_index(o.location);
      if (loc < 0 || !m_locations[size_t(loc)].gpu) continue;
      const std::string& memory = m_locations[size_t(loc)].memory;
      if (covered(memory, a.device)) continue;
      bool known = false;
      for (const auto& v : s.views) known |= v.location == loc && v.observer == a.device;
      if (!known) s.views.push_back({loc, a.device, s.memory[size_t(loc)], {}});
    }
  }
  // GPU:bar1-read-back taken out: BAR1 reads see landed writes as a peer's kernel would.
  if (!m_rules.on("GPU:bar1-read-back"))
    for (const auto& a : m_test.agents)
      for (const auto& o : a.program) {
        const int loc = location_index(o.location);
        if (a.kind != agent_kind::dma || o.kind != op_kind::read || loc < 0 ||
            !m_locations[size_t(loc)].gpu)
          continue;
        const std::string& memory = m_locations[size_t(loc)].memory;
        if (memory == a.device || covered(memory, bar1_reader)) continue;
        bool known = false;
        for (const auto& v : s.views) known |= v.location == loc && v.observer == bar1_reader;
        if (!known) s.views.push_back({loc, bar1_reader, s.memory[size_t(loc)], {}});
      }
  return s;
}

uint32_t machine::line_of(int loc, uint32_t word) const {
  const uint64_t offset = m_locations[size_t(loc)].spec->offset;
  return uint32_t((offset + 8 * uint64_t(word)) / line_bytes - offset / line_bytes);
}

std::vector<std::pair<state, value>> machine::cpu_loads(const state& s, int loc) const {
  const words& m = s.memory[size_t(loc)];
  if (!m_caches || s.cache[size_t(loc)].held.empty()) return {{s, value_of_location(m, loc)}};
  // Every line a No Snoop write made stale was kept or evicted: each way they can go.
  std::vector<state> ways{s};
  const cached_location& c = s.cache[size_t(loc)];
  for (size_t line = 0; line < c.held.size(); ++line) {
    if (!c.undecided[line]) continue;
    const size_t n = ways.size();
    for (size_t k = 0; k < n; ++k) {
      ways[k].cache[size_t(loc)].undecided[line] = false;
      state evicted = ways[k];
      evicted.cache[size_t(loc)].held[line] = false;
      ways.push_back(std::move(evicted));
    }
  }
  std::vector<std::pair<state, value>> out;
  for (state& n : ways) {
    cached_location& w = n.cache[size_t(loc)];
    std::vector<bool> was = w.held;
    for (uint32_t i = 0; i < m.size(); ++i) {
      const uint32_t line = line_of(loc, i);
      if (was[line]) continue;
      w.data[i] = m[i];
      w.held[line] = true;
    }
    value v = value_of_location(w.data, loc);
    out.push_back({std::move(n), v});
  }
  return out;
}

void machine::cpu_store(state& s, int loc, uint64_t v) const {
  land_value(s, loc, 0, m_locations[size_t(loc)].words, v, false);
  if (!m_caches || s.cache[size_t(loc)].held.empty()) return;
  cached_location& c = s.cache[size_t(loc)];
  for (uint32_t w = 0; w < c.data.size(); ++w)
    if (c.held[line_of(loc, w)]) c.data[w] = v;
}

void machine::drop_lines(state& s, int loc, uint32_t first, uint32_t count) const {
  if (!m_caches || s.cache[size_t(loc)].held.empty() || !count) return;
  cached_location& c = s.cache[size_t(loc)];
  const uint32_t from = line_of(loc, first), to = line_of(loc, first + count - 1);
  for (uint32_t line = from; line <= to; ++line) c.held[line] = c.undecided[line] = false;
  for (uint32_t w = 0; w < c.data.size(); ++w)
    if (!c.held[line_of(loc, w)]) c.data[w] = 0;  // one encoding per state
}

void machine::stale_lines(state& s, int loc, uint32_t first, uint32_t count) const {
  if (!m_caches || s.cache[size_t(loc)].held.empty() || !count) return;
  cached_location& c = s.cache[size_t(loc)];
  for (uint32_t line = line_of(loc, first); line <= line_of(loc, first + count - 1); ++line)
    if (c.held[line]) c.undecided[line] = true;
}

value machine::value_of_location(const words& w, int loc) const {
  const uint64_t size = m_locations[size_t(loc)].spec->size;
  auto mask = [&](size_t i) {
    const uint64_t rest = std::min<uint64_t>(8, size - 8 * i);
    return rest == 8 ? ~0ull : (1ull << (8 * rest)) - 1;
  };
  bool same = true, ramp = true;
  for (size_t i = 0; i < w.size(); ++i) {
    same &= (w[i] & mask(i)) == (w[0] & mask(i));
    ramp &= (w[i] & mask(i)) == (i & mask(i));
  }
  if (same) return value::of(w.empty() ? 0 : w[0] & mask(0));
  if (ramp) return {value::ramp, 0};
  return {value::torn, 0};
}

const op_spec* machine::step_of(const tlp& t) const {
  // The agent's step whose route the TLP is on (each fabric step has a route of its own).
  const auto& steps = m_agents[size_t(t.agent)].route;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i] == t.route) return &m_agents[size_t(t.agent)].spec->program[i];
  return nullptr;
}

const leg& machine::leg_of(const tlp& t) const {
  const route& r = m_routes[size_t(t.route)];
  switch (t.leg) {
    case 0:
      return r.out;
    case 1:
      return r.back;
    case 2:
      return r.proxy_out;
    default:
      return r.proxy_back;
  }
}

std::vector<successor> machine::successors(const state& s) const {
  std::vector<successor> out;
  // A sleep changes nothing another step can see, and commutes with every other step: taking
  // it alone, first, loses no outcome (an ample set of one invisible, independent step).
  for (size_t a = 0; a < s.agents.size(); ++a) {
    const agent_state& st = s.agents[a];
    const auto& program = m_agents[a].spec->program;
    if (st.started && size_t(st.pc) < program.size() &&
        program[size_t(st.pc)].kind == op_kind::sleep) {
      agent_steps(s, int(a), out);
      return out;
    }
  }
  for (size_t a = 0; a < s.agents.size(); ++a) agent_steps(s, int(a), out);
  for (auto& n : out) n.agent = true;
  for (size_t q = 0; q < s.queues.size(); ++q) queue_steps(s, int(q), out);
  proxy_steps(s, out);
  copy_steps(s, out);
  return out;
}

std::vector<successor> machine::timeouts(const state& s) const {
  std::vector<successor> out;
  for (size_t a = 0; a < s.agents.size(); ++a) {
    const agent_state& st = s.agents[a];
    const auto& program = m_agents[a].spec->program;
    if (!st.started || size_t(st.pc) >= program.size()) continue;
    if (program[size_t(st.pc)].kind != op_kind::await) continue;
    successor n{s, {}};
    n.next.agents[a].pc++;
    if (m_labels) n.label = m_agents[a].spec->name + " gives up waiting";
    out.push_back(std::move(n));
  }
  return out;
}

std::map<std::string, value> machine::outcome(const state& s) const {
  std::map<std::string, value> o;
  for (size_t i = 0; i < m_registers.size(); ++i) o[m_registers[i]] = s.registers[i];
  for (const auto& n : m_test.cond.names())
    if (int loc = location_index(n); loc >= 0) o[n] = value_of_location(s.memory[size_t(loc)], loc);
  return o;
}

// --- memory and what kernels see
// -------------------------------------------------------------------------------

void machine::land(state& s, int loc, uint32_t first, const words& data, bool rdma) const {
  words& m = s.memory[size_t(loc)];
  if (m.empty()) return;  // nobody looks at it
  for (size_t i = 0; i < data.size(); ++i) m[first + i] = data[i];
  for (auto& v : s.views) {
    if (v.location != loc) continue;
    if (!rdma) {  // a kernel's store or a copy: every kernel sees it
      for (size_t i = 0; i < data.size(); ++i) v.seen[first + i] = data[i];
      continue;
    }
    // An RDMA write: one pending write per sector it touches, each seen or not at a load.
    for (uint32_t w = first; w < first + data.size();) {
      const uint32_t end =
          std::min<uint32_t>(uint32_t(first + data.size()), (w / sector_words + 1) * sector_words);
      v.pending.push_back({w, end - w, data[w - first], false});
      w = end;
    }
  }
}

void machine::land_value(state& s, int loc, uint32_t first, uint32_t count, uint64_t v,
                         bool rdma) const {
  land(s, loc, first, words(count, v), rdma);
}

void machine::reveal(state& s, const std::string& memory_gpu, const std::string& observer) const {
  for (auto& v : s.views) {
    if (!memory_gpu.empty() && m_locations[size_t(v.location)].memory != memory_gpu) continue;
    if (!observer.empty() && v.observer != observer) continue;
    v.seen = s.memory[size_t(v.location)];
    v.pending.clear();
  }
}

void machine::finish_copies(state& s, int agent) const {
  for (size_t i = 0; i < s.copies.size();) {
    copy_state& c = s.copies[i];
    if (agent >= 0 && c.agent != agent) {
      ++i;
      continue;
    }
    for (size_t sec = 0; sec < c.landed.size(); ++sec) {
      if (c.landed[sec]) continue;
      const uint32_t first = uint32_t(sec * sector_words);
      const uint32_t n = std::min<uint32_t>(sector_words, uint32_t(c.data.size()) - first);
      land(s, c.to, first, words(c.data.begin() + first, c.data.begin() + first + n), false);
    }
    s.copies.erase(s.copies.begin() + long(i));
  }
}

std::vector<std::pair<state, value>> machine::kernel_loads(const state& s, const std::string& gpu,
                                                           int loc) const {
  int view = -1;
  for (size_t i = 0; i < s.views.size(); ++i)
    if (s.views[i].location == loc && s.views[i].observer == gpu) view = int(i);
  if (view < 0) return {{s, value_of_location(s.memory[size_t(loc)], loc)}};
  std::vector<size_t> open;
  for (size_t i = 0; i < s.views[size_t(view)].pending.size(); ++i)
    if (!s.views[size_t(view)].pending[i].hidden) open.push_back(i);
  // Which of them the load sees: every subset; past 10 sectors, the first k and the last k in
  // the order they landed, for every k (what a load returns is the old value, a write's
  // value or a torn mix: these subsets reach each).
  std::vector<std::vector<bool>> picks;
  const size_t n_open = open.size();
  if (n_open <= 10) {
    for (uint32_t pick = 0; pick < (1u << n_open); ++pick) {
      std::vector<bool> p(n_open);
      for (size_t b = 0; b < n_open; ++b) p[b] = pick >> b & 1;
      picks.push_back(p);
    }
  } else {
    for (size_t k = 0; k <= n_open; ++k) {
      std::vector<bool> first(n_open), last(n_open);
      for (size_t b = 0; b < n_open; ++b) {
        first[b] = b < k;
        last[b] = b >= n_open - k;
      }
      picks.push_back(first);
      if (k && k < n_open) picks.push_back(last);
    }
  }
  std::vector<std::pair<state, value>> out;
  for (const auto& pick : picks) {
    state n = s;
    view_state& v = n.views[size_t(view)];
    for (size_t b = 0; b < n_open; ++b) {
      pending_write& p = v.pending[open[b]];
      if (pick[b]) {
        for (uint32_t w = p.first; w < p.first + p.count; ++w) v.seen[w] = p.value;
        p.count = 0;  // seen: dropped below
      } else {
        p.hidden = true;
      }
    }
    std::erase_if(v.pending, [](const pending_write& p) { return p.count == 0; });
    const value got = value_of_location(v.seen, loc);
    out.push_back({std::move(n), got});
  }
  return out;
}

}  // namespace p2psim::litmus::reference
