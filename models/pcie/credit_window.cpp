#include "models/pcie/credit_window.h"

#include <algorithm>

namespace p2psim::pcie {

credit_window::credit_window(uint32_t headers, uint32_t data, const credit_loop& loop)
    : m_headers(headers), m_data(data), m_loop(loop) {}

void credit_window::take_back(uint32_t tlps) {
  run& r = m_recent.front();
  r.count -= tlps;
  r.back_ps += uint64_t(tlps) * r.step_ps;
  m_out -= tlps;
  m_data_out -= tlps * r.data;
  if (!r.count) m_recent.pop_front();
}

// The credits of every TLP whose loop is over by `t` are back.
void credit_window::back_by(uint64_t t) {
  while (!m_recent.empty() && m_recent.front().back_ps <= t) {
    const run& r = m_recent.front();
    const uint64_t over = r.step_ps ? (t - r.back_ps) / r.step_ps + 1 : r.count;
    take_back(uint32_t(std::min<uint64_t>(over, r.count)));
  }
}

void credit_window::push(uint64_t first_ps, uint64_t step_ps, uint32_t tlps, uint32_t data,
                         uint64_t loop) {
  if (!tlps) return;
  m_recent.push_back({first_ps + loop, step_ps, tlps, data});
  m_out += tlps;
  m_data_out += tlps * data;
}

uint64_t credit_window::place(uint64_t first_ps, uint32_t tlps, uint32_t data_credits,
                              uint64_t spacing_ps, uint64_t ready_ps, uint64_t lag_ps,
                              uint64_t symbols_ps, uint64_t hold_ps) {
  credit_loop held = m_loop;
  held.hold_ps = std::max(held.hold_ps, hold_ps);
  const uint64_t loop = held.of(symbols_ps);
  // Each TLP's share of the data credits: the remainder goes to the first TLPs.
  const uint32_t each = data_credits / tlps, more = data_credits % tlps;
  // TLP k comes `spacing` after the one before, and no sooner than it is ready here.
  auto unpaced = [&](uint32_t k) {
    return std::max(first_ps + k * spacing_ps, ready_ps + (k ? lag_ps * k / (tlps - 1) : 0));
  };
  uint32_t k = 0;         // the next TLP to place
  uint64_t t = first_ps;  // when it would start
  // How many of TLPs k... the credits out now leave room for.
  auto room = [&] {
    uint32_t n = tlps - k;
    if (m_headers) n = std::min(n, m_headers > m_out ? m_headers - m_out : 0);
    if (m_data) {
      const uint32_t avail = m_data > m_data_out ? m_data - m_data_out : 0;
      const uint32_t larger = k < more ? more - k : 0;
      uint32_t fit;
      if (uint64_t(larger) * (each + 1) > avail)
        fit = avail / (each + 1);
      else
        fit = larger + (each ? (avail - larger * (each + 1)) / each : tlps);
      n = std::min(n, fit);
    }
    return n;
  };
  // Starts TLPs k... (`n` of them) from t without waiting, one run of starts recorded evenly
  // from the first to the last, no sooner than each really is (a TLP's start is the later of
  // two straight lines in k, so it lies on or below that chord): a later start brings its
  // credits back later, so no window after this one lets more through than TLP by TLP would.
  auto start = [&](uint32_t n) {
    const uint64_t last = std::max(t + (n - 1) * spacing_ps, unpaced(k + n - 1));
    const uint64_t step = n > 1 ? (last - t + n - 2) / (n - 1) : spacing_ps;
    const uint32_t larger = k < more ? std::min(more - k, n) : 0;
    push(t, step, larger, each + 1, loop);
    push(t + larger * step, step, n - larger, each, loop);
    k += n;
    t = last;
  };
  back_by(t);
  while (true) {
    // A TLP that needs more data credits than there are goes alone.
    if (const uint32_t n = m_recent.empty() ? std::max(room(), 1u) : room()) {
      start(n);
      if (k == tlps) return t;
      t = std::max(t + spacing_ps, unpaced(k));
      back_by(t);
      continue;
    }
    // Short of credits: the next TLP starts when the oldest TLP's come back. Where those
    // came one after another no faster than these go and freed as many data credits, each
    // of the next ones takes the credits of one of them as they come back.
    const run& oldest = m_recent.front();
    t = std::max(t, oldest.back_ps);
    if (oldest.step_ps <= spacing_ps && (!m_data || oldest.data >= each + (k < more))) {
      const uint32_t n = std::min(oldest.count, tlps - k);
      take_back(n);
      start(n);
      if (k == tlps) return t;
      t = std::max(t + spacing_ps, unpaced(k));
    }
    back_by(t);
  }
}

}  // namespace p2psim::pcie
