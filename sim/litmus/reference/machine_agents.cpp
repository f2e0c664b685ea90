// The agents' steps, and the CUDA copies they start landing (machine.h).
#include "sim/litmus/reference/machine.h"

#include <algorithm>

#include "sim/topology/topology.h"

namespace p2psim::litmus::reference {

void machine::issue(state& s, int a, int step) const {
  const agent_spec& spec = *m_agents[size_t(a)].spec;
  const op_spec& op = spec.program[size_t(step)];
  const route& r = m_routes[size_t(m_agents[size_t(a)].route[size_t(step)])];
  const int loc = location_index(op.location);
  const location_spec& l = *m_locations[size_t(loc)].spec;
  if (!r.refused.empty()) return;  // Unsupported Request: nothing lands, the register stays unset
  const auto& control = m_topo.find_device(spec.device)->control;
  tlp t;
  t.ord.ro = op.relaxed_ordering;
  t.ord.ido = op.id_based_ordering;
  t.no_snoop = op.no_snoop;
  t.ord.tc = op.traffic_class;
  t.ord.requester = m_fabric.id_of(spec.device);
  t.agent = a;
  t.route = m_agents[size_t(a)].route[size_t(step)];
  if (op.kind == op_kind::write) {
    t.ord.kind = tlp_kind::posted;
    t.value = op.value;
    // Max Payload Size pieces that do not cross a 4 KiB boundary.
    for (uint64_t at = 0; at < l.size;) {
      const uint64_t address = l.offset + at;
      const uint64_t end =
          std::min({l.size, at + control.mps, at + page_bytes - address % page_bytes});
      t.first = uint32_t(at / 8);
      t.count = uint32_t((end - at + 7) / 8);
      enter(s, t, 0, 0);
      s.agents[size_t(a)].posted_near++;
      at = end;
    }
    return;
  }
  gather_state g;
  g.agent = a;
  const int gather = int(s.gathers.size());
  s.gathers.push_back(g);
  auto request = [&](uint32_t first, uint32_t count) {
    request_state rq;
    rq.step = gather;
    rq.first = first;
    rq.count = count;
    s.requests.push_back(rq);
    s.gathers[size_t(gather)].pending++;
    s.agents[size_t(a)].outstanding++;
    t.request = int(s.requests.size()) - 1;
    t.ord.request = t.request;
    t.first = first;
    t.count = count;
    enter(s, t, 0, 0);
  };
  s.gathers[size_t(gather)].data.assign(
      op.kind == op_kind::atomic ? 1 : l.size / 8 + (l.size % 8 != 0), 0);
  if (op.kind == op_kind::atomic) {
    t.ord.kind = tlp_kind::atomic;
    t.value = op.value;
    request(0, 1);
    return;
  }
  t.ord.kind = tlp_kind::read;
  // Max Read Request Size pieces that do not cross a 4 KiB boundary.
  for (uint64_t at = 0; at < l.size;) {
    const uint64_t address = l.offset + at;
    const uint64_t end =
        std::min({l.size, at + control.mrrs, at + page_bytes - address % page_bytes});
    request(uint32_t(at / 8), uint32_t((end - at + 7) / 8));
    at = end;
  }
}

void machine::agent_steps(const state& s, int a, std::vector<successor>& out) const {
  const agent_state& st = s.agents[size_t(a)];
  const agent_spec& spec = *m_agents[size_t(a)].spec;
  if (!st.started || size_t(st.pc) >= spec.program.size()) return;
  const op_spec& op = spec.program[size_t(st.pc)];
  const int loc = op.location.empty() ? -1 : location_index(op.location);
  const int reg = op.reg.empty() ? -1 : register_index(op.reg);
  auto label = [&](const std::string& what) {
    return m_labels ? spec.name + ": " + what : std::string();
  };
  auto next = [&](state n, const std::string& what) {
    n.agents[size_t(a)].pc++;
    out.push_back({std::move(n), label(what)});
  };
  const bool own = loc >= 0 && m_locations[size_t(loc)].memory == spec.device;
  const bool kernel_view = spec.kind == agent_kind::kernel;
  // A load as this agent makes it: every way it can go.
  auto loads = [&](const state& from) -> std::vector<std::pair<state, value>> {
    if (kernel_view) return kernel_loads(from, spec.device, loc);
    if (spec.kind == agent_kind::cpu) return cpu_loads(from, loc);
    return {{from, value_of_location(from.memory[size_t(loc)], loc)}};
  };
  switch (op.kind) {
    case op_kind::write: {
      state n = s;
      if (spec.kind == agent_kind::dma && !own) {
        issue(n, a, st.pc);
        return next(std::move(n), "writes " + op.location);
      }
      if (spec.kind == agent_kind::cpu)
        cpu_store(n, loc, op.value);
      else
        land_value(n, loc, 0, m_locations[size_t(loc)].words, op.value, false);
      return next(std::move(n), "stores " + op.location);
    }
    case op_kind::read: {
      if (spec.kind == agent_kind::dma && !own) {
        state n = s;
        issue(n, a, st.pc);
        return next(std::move(n), "reads " + op.location);
      }
      for (auto& [n, v] : loads(s)) {
        if (reg >= 0) n.registers[size_t(reg)] = v;
        next(std::move(n), "loads " + op.location + " = " + v.str());
      }
      return;
    }
    case op_kind::atomic: {
      state n = s;
      issue(n, a, st.pc);
      return next(std::move(n), "AtomicOp on " + op.location);
    }
    case op_kind::await: {
      for (auto& [n, v] : loads(s)) {
        if (v == value::of(op.value)) {
          if (reg >= 0) n.registers[size_t(reg)] = v;
          next(std::move(n), "sees " + op.location + " = " + v.str());
        } else if (n.encode() != s.encode()) {
          out.push_back({std::move(n), label("misses writes to " + op.location)});
        }
      }
      return;
    }
    case op_kind::flush_cache: {
      state n = s;
      drop_lines(n, loc, 0, m_locations[size_t(loc)].words);
      return next(std::move(n), "flushes the cache lines of " + op.location);
    }
    case op_kind::fence:
      if (st.outstanding == 0 && st.posted_near == 0) next(s, "fence");
      return;
    case op_kind::sleep:
      return next(s, "sleeps");
    case op_kind::launch: {
      state n = s;
      int target = -1;
      for (size_t i = 0; i < m_agents.size(); ++i)
        if (m_agents[i].spec->name == op.agent) target = int(i);
      n.agents[size_t(target)].started = true;
      const agent_spec& t = *m_agents[size_t(target)].spec;
      if (t.kind == agent_kind::kernel) {
        // A CUDA work submission: the copies ahead of it on the stream are done first, and
        // landed RDMA writes become visible to the GPU's kernels.
        if (m_rules.on("CUDA:stream-order")) finish_copies(n, a);
        if (m_rules.on("GPU:cpu-sync")) reveal(n, "", t.device);
      }
      return next(std::move(n), "launches " + op.agent);
    }
    case op_kind::sync: {
      // The call makes landed RDMA writes visible to the context's kernels and completes the
      // copies on its stream (guide 5.7); it returns once the context's kernels are done.
      if (!st.syncing) {
        state n = s;
        n.agents[size_t(a)].syncing = true;
        if (m_rules.on("CUDA:stream-order")) finish_copies(n, a);
        if (m_rules.on("GPU:cpu-sync")) reveal(n, "", spec.context);
        out.push_back({std::move(n), label("calls cuCtxSynchronize")});
        return;
      }
      for (size_t i = 0; i < m_agents.size(); ++i) {
        const agent_spec& k = *m_agents[i].spec;
        const agent_state& ks = s.agents[i];
        if (k.kind == agent_kind::kernel && k.device == spec.context && ks.started &&
            size_t(ks.pc) < k.program.size())
          return;  // waits for the kernels of its context
      }
      state n = s;
      n.agents[size_t(a)].syncing = false;
      return next(std::move(n), "cuCtxSynchronize returns");
    }
    case op_kind::flush: {
      state n = s;
      if (m_rules.on("GPU:flush"))
        reveal(n, spec.context, op.scope == "all_devices" ? "" : spec.context);
      return next(std::move(n), "cuFlushGPUDirectRDMAWrites to " + op.scope);
    }
    case op_kind::copy: {
      state n = s;
      const int to = location_index(op.to);
      if (m_rules.on("CUDA:stream-order")) finish_copies(n, a);
      if (m_rules.on("GPU:cpu-sync")) reveal(n, "", spec.context);
      copy_state c;
      c.agent = a;
      c.to = to;
      c.data = n.memory[size_t(loc)];
      const bool sync_memops =
          m_locations[size_t(loc)].spec->sync_memops || m_locations[size_t(to)].spec->sync_memops;
      if (!op.async && sync_memops && m_rules.on("CUDA:SYNC_MEMOPS")) {
        land(n, to, 0, c.data, false);
        return next(std::move(n), "copies " + op.location + " to " + op.to + " (complete)");
      }
      c.landed.assign((c.data.size() + sector_words - 1) / sector_words, false);
      n.copies.push_back(std::move(c));
      return next(std::move(n), "copies " + op.location + " to " + op.to + " (returns)");
    }
  }
}

void machine::copy_steps(const state& s, std::vector<successor>& out) const {
  for (size_t i = 0; i < s.copies.size(); ++i)
    for (size_t sec = 0; sec < s.copies[i].landed.size(); ++sec) {
      if (s.copies[i].landed[sec]) continue;
      state n = s;
      copy_state& c = n.copies[i];
      c.landed[sec] = true;
      const uint32_t first = uint32_t(sec * sector_words);
      const uint32_t count = std::min<uint32_t>(sector_words, uint32_t(c.data.size()) - first);
      const words part(c.data.begin() + first, c.data.begin() + first + count);
      const int to = c.to;
      if (std::all_of(c.landed.begin(), c.landed.end(), [](bool b) { return b; }))
        n.copies.erase(n.copies.begin() + long(i));
      land(n, to, first, part, false);
      out.push_back({std::move(n), m_labels ? "a sector of the copy to " +
                                                  m_locations[size_t(to)].spec->name + " lands"
                                            : std::string()});
    }
}

}  // namespace p2psim::litmus::reference
