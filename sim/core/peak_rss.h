// The process's peak resident memory, for the `host` figures of a run and a bench floor.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace p2psim::core {

// Peak resident memory of this program image in KiB: VmHWM of /proc/self/status. Not
// getrusage's ru_maxrss: Linux carries the peak of the image a process replaced with exec into
// it, and a child forked from a large parent starts with the parent's pages counted, so every
// `p2psim run` child of `p2psim bench` reported at least the bench's own memory (38 MiB once it
// held the scale cases' scenarios, whatever the case used). ru_maxrss where there is no /proc.
inline uint64_t peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));  // "VmHWM:  1234 kB"
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return uint64_t(ru.ru_maxrss);  // Linux: KiB
}

}  // namespace p2psim::core
