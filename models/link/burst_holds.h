// Burst fidelity: how often a transmission waited for a burst of another stream (or of another
// flow-control class of its own, which TLP by TLP it may pass) where TLP by TLP it would have
// waited for one TLP of it and gone in the gaps (docs/architecture.md, "Burst fidelity", a
// burst is one unit in every queue). Two kinds are counted apart:
//   - held: the burst was at least four times its size, or held the wire at least four times
//     as long as its symbols take (its TLPs trickling in from a slower link or a page walk at
//     a time);
//   - held_by_ran_ahead: a smaller burst that, on some link before, started without credits
//     for all of its TLPs (double buffering): TLP by TLP its TLPs would have come in as the
//     receiver freed room, further apart, and the transmission gone between them (generated
//     seeds 699 and 2693).
// Plain C++: a link direction tells it of every transmission it starts.
#pragma once

#include <array>
#include <cstdint>

namespace p2psim::link {

class burst_holds {
 public:
  // A transmission of `tlps` TLPs of `stream` in flow-control class `cls`, ready at
  // `ready_ps`, started at `start_ps`; its TLPs are through at `end_ps`, and its symbols
  // alone take `symbols_ps`; `ran_ahead`: it ran ahead of its credits on some link.
  void started(uint32_t stream, uint32_t tlps, uint64_t ready_ps, uint64_t start_ps,
               uint64_t end_ps, uint64_t symbols_ps, int cls = 0, bool ran_ahead = false) {
    if (tlps > 1)
      m_bursts = true;
    else if (!m_bursts)
      return;  // nothing before the first burst is larger than what comes after: no record
    if (start_ps > ready_ps) count_hold(stream, cls, tlps, ready_ps);
    m_recent[m_next] = {start_ps, end_ps, symbols_ps, stream, tlps, cls, ran_ahead};
    m_next = (m_next + 1) % m_recent.size();
  }
  uint64_t count() const { return m_held; }
  uint64_t count_ran_ahead() const { return m_held_by_ran_ahead; }

 private:
  struct transmission {
    uint64_t start_ps = 0, end_ps = 0, symbols_ps = 0;
    uint32_t stream = 0, tlps = 0;
    int cls = 0;
    bool ran_ahead = false;
  };
  enum class hold { none, larger, ran_ahead };
  // What held it: the transmission just before it, or the one on the wire when it became
  // ready (a burst cut short to let it pass leaves a piece of one TLP just before it, but the
  // rest of the burst it was ready during held it all the same).
  [[gnu::noinline]] void count_hold(uint32_t stream, int cls, uint32_t tlps, uint64_t ready_ps) {
    auto kind = [&](const transmission& t) {
      if ((t.stream == stream && t.cls == cls) || t.tlps < 2) return hold::none;
      if (t.tlps >= 4 * tlps || t.end_ps - t.start_ps >= 4 * t.symbols_ps) return hold::larger;
      return t.ran_ahead ? hold::ran_ahead : hold::none;
    };
    hold h = kind(m_recent[(m_next + m_recent.size() - 1) % m_recent.size()]);
    for (const transmission& t : m_recent)
      if (h != hold::larger && t.start_ps <= ready_ps && ready_ps < t.end_ps)
        if (hold k = kind(t); k != hold::none) h = k;
    if (h == hold::larger) ++m_held;
    if (h == hold::ran_ahead) ++m_held_by_ran_ahead;
  }
  std::array<transmission, 4> m_recent{};
  size_t m_next = 0;
  bool m_bursts = false;  // none before the first burst: TLP by TLP there is nothing to count
  uint64_t m_held = 0, m_held_by_ran_ahead = 0;
};

}  // namespace p2psim::link
