// Who decides the table's Y/N cases. A place that may reorder TLPs (a link's egress queue)
// asks its fabric's choice source (order_policy.h) to pick among the TLPs it may send next.
// Without one the oldest goes first (deterministic runs, golden results); a seeded source
// explores orders at random and reproducibly; a replay source follows a recorded prefix of
// choices and records the rest, so a litmus runner can enumerate every order exhaustively.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace p2psim::pcie {

class choice_source {
 public:
  virtual ~choice_source() = default;
  // One of `options` (>= 2) alternatives, 0 being the in-order one.
  virtual size_t pick(size_t options) = 0;
};

class seeded_choices final : public choice_source {
 public:
  explicit seeded_choices(uint64_t seed) : m_rng(seed) {}
  size_t pick(size_t options) override {
    ++m_picks;
    return std::uniform_int_distribution<size_t>(0, options - 1)(m_rng);
  }
  uint64_t picks() const { return m_picks; }  // decisions it was asked to make

 private:
  std::mt19937_64 m_rng;
  uint64_t m_picks = 0;
};

// Follows `prefix`, then takes alternative 0; records every decision and its option count.
class replay_choices final : public choice_source {
 public:
  explicit replay_choices(std::vector<size_t> prefix = {}) : m_prefix(std::move(prefix)) {}
  size_t pick(size_t options) override {
    size_t i = m_taken.size();
    size_t c = i < m_prefix.size() && m_prefix[i] < options ? m_prefix[i] : 0;
    m_taken.push_back(c);
    m_options.push_back(options);
    return c;
  }
  const std::vector<size_t>& taken() const { return m_taken; }
  const std::vector<size_t>& options() const { return m_options; }

 private:
  std::vector<size_t> m_prefix, m_taken, m_options;
};

}  // namespace p2psim::pcie
