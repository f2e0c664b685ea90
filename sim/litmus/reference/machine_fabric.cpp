// The fabric's steps (machine.h): TLPs leaving queues, arriving at completers, root complexes
// returning the data they read for a requester.
#include "sim/litmus/reference/machine.h"

#include <algorithm>

namespace p2psim::litmus::reference {

void machine::enter(state& s, tlp t, int leg_index, int hop) const {
  t.leg = leg_index;
  t.hop = hop;
  const leg& l = leg_of(t);
  const int q = l.queues[size_t(hop)];
  if (s.queues.size() <= size_t(q)) s.queues.resize(size_t(q) + 1);
  const uint32_t piece = l.pieces[size_t(hop)] / 8;
  if (piece && t.ord.kind == tlp_kind::posted && t.count > piece) {
    // A root complex re-emits a write in its pieces, each a TLP of its own.
    for (uint32_t w = t.first; w < t.first + t.count;) {
      const uint32_t end = std::min(t.first + t.count, (w / piece + 1) * piece);
      tlp p = t;
      p.first = w;
      p.count = end - w;
      s.queues[size_t(q)].push_back(p);
      w = end;
    }
    return;
  }
  s.queues[size_t(q)].push_back(std::move(t));
}

void machine::queue_steps(const state& s, int q, std::vector<successor>& out) const {
  const auto& queue = s.queues[size_t(q)];
  for (size_t i = 0; i < queue.size(); ++i) {
    std::string why;
    bool may = true;
    for (size_t j = 0; j < i && may; ++j) {
      std::string rule;
      may = may_pass(queue[i].ord, queue[j].ord, m_rules, m_labels ? &rule : nullptr);
      if (may && m_labels && why.find(rule) == std::string::npos)
        why += (why.empty() ? "" : ", ") + rule;
    }
    if (!may) continue;
    state n = s;
    tlp t = n.queues[size_t(q)][i];
    n.queues[size_t(q)].erase(n.queues[size_t(q)].begin() + long(i));
    if (t.leg == 0 && t.hop == 0 && t.ord.kind == tlp_kind::posted && t.agent >= 0)
      n.agents[size_t(t.agent)].posted_near--;
    std::string label;
    if (m_labels) {
      label = (t.ord.requester == m_fabric.id_of(m_agents[size_t(t.agent)].spec->device)
                   ? m_agents[size_t(t.agent)].spec->name + "'s "
                   : "the " + std::string(t.leg >= 2 ? "root complex's " : "")) +
              kind_name(t.ord.kind) + (t.ord.kind == tlp_kind::completion ? " for " : " of ") +
              step_of(t)->location + " leaves " + m_fabric.queue_name(q);
      if (i) label += " ahead of " + std::to_string(i) + " older (" + why + ")";
    }
    const leg& l = leg_of(t);
    if (size_t(t.hop) + 1 < l.queues.size()) {
      enter(n, t, t.leg, t.hop + 1);
      out.push_back({std::move(n), label});
      continue;
    }
    for (state& a : arrivals(n, t)) out.push_back({std::move(a), label});
  }
}

std::vector<state> machine::arrivals(const state& s, const tlp& t) const {
  const route& r = m_routes[size_t(t.route)];
  const int loc = location_index(step_of(t)->location);
  const bool at_completer = !((t.leg == 0 && r.proxied) || t.leg == 3);
  if (t.ord.kind == tlp_kind::read && at_completer && m_locations[size_t(loc)].gpu)
    for (const view_state& v : s.views)
      if (v.location == loc && v.observer == bar1_reader) {
        std::vector<state> out;
        for (auto& [n, seen] : kernel_loads(s, bar1_reader, loc)) {
          words data;
          for (const view_state& w : n.views)
            if (w.location == loc && w.observer == bar1_reader) data = w.seen;
          arrive(n, t, &data);
          out.push_back(std::move(n));
        }
        return out;
      }
  state n = s;
  arrive(n, t);
  return {std::move(n)};
}

void machine::arrive(state& s, tlp t, const words* data) const {
  const route& r = m_routes[size_t(t.route)];
  const op_spec* op = step_of(t);
  const int loc = location_index(op->location);
  auto answer = [&](tlp req, const words& data, int back_leg, int completer) {
    // Completions of the completer's size (host memory: the platform's; a device: its Max
    // Payload Size), no larger than the requester's Max Payload Size, cut at address
    // multiples of it (so at Read Completion Boundaries).
    const location_spec& l = *m_locations[size_t(loc)].spec;
    const uint32_t requester_mps =
        back_leg == 3 ? m_topo.pcie.mps
                      : m_topo.find_device(m_agents[size_t(t.agent)].spec->device)->control.mps;
    uint32_t size = requester_mps;
    if (const auto* socket = m_topo.find_socket(l.memory))
      size = std::min(size, socket->platform.memory.cpl_bytes);
    else
      size = std::min(size, m_topo.find_device(l.memory)->control.mps);
    const uint32_t cut = std::max<uint32_t>(size / 8, m_rcb_words);
    const uint64_t base = l.offset / 8;
    for (uint32_t w = req.first; w < req.first + req.count;) {
      const uint32_t end =
          std::min<uint32_t>(req.first + req.count, uint32_t(((base + w) / cut + 1) * cut - base));
      tlp c = req;
      c.ord.kind = tlp_kind::completion;
      c.ord.requester = completer;
      c.first = w;
      c.count = end - w;
      c.data.assign(data.begin() + (w - req.first), data.begin() + (end - req.first));
      enter(s, c, back_leg, 0);
      w = end;
    }
  };
  const bool at_proxy = (t.leg == 0 && r.proxied) || t.leg == 3;
  if (t.ord.kind == tlp_kind::posted) {
    land_value(s, loc, t.first, t.count, t.value, m_locations[size_t(loc)].gpu);
    if (t.no_snoop && m_rules.on("Host:no-snoop"))
      stale_lines(s, loc, t.first, t.count);
    else if (m_rules.on("Host:snoop"))
      drop_lines(s, loc, t.first, t.count);  // snooped: the CPUs' copies go
    return;
  }
  if (t.ord.kind == tlp_kind::read && at_proxy) {
    // The root complex reads the target itself, under its own ID, in its pieces, without IDO
    // (with it, its read could pass the writes the requester sent before).
    const uint32_t piece = r.proxy_out.pieces.front() / 8;
    for (uint32_t w = t.first; w < t.first + t.count;) {
      const uint32_t end =
          piece ? std::min(t.first + t.count, (w / piece + 1) * piece) : t.first + t.count;
      request_state rq;
      rq.parent = t.request;
      rq.first = w;
      rq.count = end - w;
      s.requests.push_back(rq);
      tlp p = t;
      p.ord.requester = r.proxy;
      p.ord.ido = false;
      p.request = int(s.requests.size()) - 1;
      p.ord.request = p.request;
      p.first = w;
      p.count = end - w;
      enter(s, p, 2, 0);
      w = end;
    }
    return;
  }
  if (t.ord.kind == tlp_kind::read) {
    const words& m = data ? *data : s.memory[size_t(loc)];
    answer(t, words(m.begin() + t.first, m.begin() + t.first + t.count), t.leg == 2 ? 3 : 1,
           r.completer);
    return;
  }
  if (t.ord.kind == tlp_kind::atomic) {
    words& m = s.memory[size_t(loc)];
    const uint64_t old = m.empty() ? 0 : m[0];
    uint64_t now = old;
    switch (op->atomic) {
      case atomic_op::fetch_add:
        now = old + t.value;
        break;
      case atomic_op::swap:
        now = t.value;
        break;
      case atomic_op::cas:
        now = old == op->compare ? t.value : old;
        break;
    }
    if (m_locations[size_t(loc)].spec->size < 8)
      now &= (1ull << (8 * m_locations[size_t(loc)].spec->size)) - 1;
    if (now != old) land_value(s, loc, 0, 1, now, m_locations[size_t(loc)].gpu);
    if (m_rules.on("Host:snoop")) drop_lines(s, loc, 0, 1);
    tlp c = t;
    c.ord.kind = tlp_kind::completion;
    c.ord.requester = r.completer;
    c.data = {old};
    enter(s, c, 1, 0);
    return;
  }
  // A completion.
  request_state& rq = s.requests[size_t(t.request)];
  const uint32_t at = rq.first + rq.received;  // placed in the order they came
  rq.received += t.count;
  if (t.leg == 3) {  // at the proxying root complex: held until it is next in address order
    const int parent = rq.parent;
    tlp held = t;
    held.request = parent;
    held.ord.request = parent;
    held.ord.requester = r.proxy;
    held.first = at;
    s.proxy_held.push_back(held);
    return;
  }
  gather_state& g = s.gathers[size_t(rq.step)];
  for (uint32_t i = 0; i < t.count; ++i) g.data[at + i] = t.data[i];
  if (!op->into.empty()) {
    const int into = location_index(op->into);
    land(s, into, at, t.data, false);
  }
  if (rq.received < rq.count) return;
  s.agents[size_t(t.agent)].outstanding--;
  if (--g.pending > 0) return;
  if (op->reg.empty()) return;
  const int reg = register_index(op->reg);
  s.registers[size_t(reg)] =
      op->kind == op_kind::atomic ? value::of(g.data[0]) : value_of_location(g.data, loc);
}

void machine::proxy_steps(const state& s, std::vector<successor>& out) const {
  for (size_t i = 0; i < s.proxy_held.size(); ++i) {
    const tlp& t = s.proxy_held[i];
    const request_state& rq = s.requests[size_t(t.request)];
    if (t.first != rq.first + rq.forwarded) continue;  // returned in address order
    state n = s;
    tlp c = t;
    n.proxy_held.erase(n.proxy_held.begin() + long(i));
    n.requests[size_t(t.request)].forwarded += t.count;
    enter(n, c, 1, 0);
    out.push_back({std::move(n), m_labels ? "a root complex returns data it read" : std::string()});
  }
}

}  // namespace p2psim::litmus::reference
