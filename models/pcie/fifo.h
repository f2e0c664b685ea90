// A queue for the per-TLP paths: a ring buffer that doubles when full and otherwise never
// allocates. These queues (a link's class queues, a port's arrivals, credit returns) hold a
// few entries at a time; a std::deque moving through them allocates and frees a node every
// few dozen pushes.
#pragma once

#include <iterator>

#include <boost/circular_buffer.hpp>

namespace p2psim::pcie {

template <class T>
class fifo : public boost::circular_buffer<T> {
 public:
  fifo() : boost::circular_buffer<T>(16) {}
  void push_back(const T& v) {
    if (this->full()) [[unlikely]]
      grow();
    boost::circular_buffer<T>::push_back(v);
  }
  // Queues `v` in a ring kept sorted by `key` (a callable giving an entry's key), after the
  // entries of equal key. Entries mostly come in order: appending is the common case.
  template <class Key>
  void insert_sorted(const T& v, Key key) {
    if (this->empty() || key(this->back()) <= key(v)) return push_back(v);
    auto at = this->end();
    while (at != this->begin() && key(*std::prev(at)) > key(v)) --at;
    insert(at, v);
  }
  // Keeps every entry (a full ring would drop one). Out of line: the per-TLP paths push at the
  // back, and their code must stay small enough for the instruction cache.
  template <class It>
  [[gnu::noinline]] void insert(It pos, const T& v) {
    if (this->full()) {
      const auto i = pos - this->begin();
      grow();
      pos = this->begin() + i;
    }
    boost::circular_buffer<T>::insert(pos, v);
  }

 private:
  [[gnu::noinline, gnu::cold]] void grow() { this->set_capacity(2 * this->capacity()); }
};

}  // namespace p2psim::pcie
