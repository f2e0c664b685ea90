// Linux's error pointers (include/linux/err.h): a function that returns a pointer returns a
// negative errno in it on failure, in the top 4095 values of the address space, which no
// object occupies.
#pragma once

#include <cstdint>

inline constexpr long MAX_ERRNO = 4095;

// What ERR_PTR(-e) returns: converts to whichever pointer the function returns.
struct error_pointer {
  long error;
  template <typename T>
  operator T*() const {
    return reinterpret_cast<T*>(static_cast<intptr_t>(error));
  }
};

inline error_pointer ERR_PTR(long error) {
  return {error};
}
inline bool IS_ERR(const void* p) {
  return reinterpret_cast<uintptr_t>(p) >= static_cast<uintptr_t>(-MAX_ERRNO);
}
inline bool IS_ERR_OR_NULL(const void* p) {
  return !p || IS_ERR(p);
}
inline long PTR_ERR(const void* p) {
  return static_cast<long>(reinterpret_cast<intptr_t>(p));
}
