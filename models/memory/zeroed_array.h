// Zero-filled arrays from calloc: the C library hands large blocks out as fresh pages that
// are already zero, so the parts a run never touches cost neither time nor memory. (A
// std::vector or make_unique<T[]> would write every byte, faulting every page in.)
#pragma once

#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace p2psim::memory {

struct free_deleter {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
using zeroed_array = std::unique_ptr<T[], free_deleter>;

// For types whose all-zero bytes are a valid value (integers, raw pointers).
template <typename T>
zeroed_array<T> make_zeroed(size_t n) {
  static_assert(std::is_trivially_default_constructible_v<T> &&
                std::is_trivially_destructible_v<T>);
  void* p = std::calloc(n ? n : 1, sizeof(T));
  if (!p) throw std::bad_alloc();
  return zeroed_array<T>(static_cast<T*>(p));
}

}  // namespace p2psim::memory
