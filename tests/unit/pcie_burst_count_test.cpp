// Burst fidelity counts the TLPs a burst stands for arithmetically; the counts must equal
// what cutting the same bytes TLP by TLP gives (PCIe Base Spec 2.2.7, 2.3.1.1).
#include <catch2/catch.hpp>

#include "models/pcie/split.h"

using namespace p2psim::pcie;

TEST_CASE("burst counts: requests equal split_request", "[pcie][burst]") {
  for (uint32_t max : {64u, 128u, 256u, 512u, 4096u})
    for (uint64_t addr : {0ull, 4ull, 60ull, 4092ull, 0x10000ull - 8, 0x123456ull})
      for (uint64_t len : {1ull, 63ull, 64ull, 256ull, 4097ull, 65536ull, 100000ull}) {
        INFO("max " << max << " address " << addr << " length " << len);
        CHECK(count_requests(addr, len, max) == split_request(addr, len, max).size());
      }
}

TEST_CASE("burst counts: completions equal split_completion per request", "[pcie][burst]") {
  for (uint32_t mrrs : {128u, 512u, 4096u})
    for (uint32_t cpl : {64u, 128u, 256u})
      for (uint64_t addr : {0ull, 8ull, 100ull, 4000ull})
        for (uint64_t len : {4ull, 512ull, 5000ull, 65536ull}) {
          size_t want = 0;
          for (const chunk& r : split_request(addr, len, mrrs))
            want += split_completion(r.address, r.length, cpl, 64).size();
          INFO("mrrs " << mrrs << " cpl " << cpl << " address " << addr << " length " << len);
          CHECK(count_completions(addr, len, mrrs, cpl, 64) == want);
        }
}

TEST_CASE("burst counts: next_burst stops at the boundary and the TLP limit", "[pcie][burst]") {
  request_splitter s(0x1000 - 64, 3 * 65536, 256);  // starts 64 bytes before a 4 KiB line
  uint32_t tlps = 0;
  chunk c = s.next_burst(65536, 1000, tlps);  // to the first 64 KiB boundary
  CHECK(c.address == 0x1000 - 64);
  CHECK(c.length == 65536 - (0x1000 - 64));
  CHECK(tlps == count_requests(c.address, c.length, 256));
  c = s.next_burst(65536, 4, tlps);  // at most 4 TLPs
  CHECK(c.address == 65536);
  CHECK(c.length == 4 * 256);
  CHECK(tlps == 4);
  uint64_t total = 65536 - (0x1000 - 64) + 4 * 256;
  while (!s.done()) total += s.next_burst(65536, 1000, tlps).length;
  CHECK(total == 3 * 65536);
}

TEST_CASE("burst ends: first and last requests equal split_request's", "[pcie][burst]") {
  for (uint32_t max : {64u, 128u, 256u, 512u, 4096u})
    for (uint64_t addr : {0ull, 4ull, 60ull, 4092ull, 0x10000ull - 8, 0x123456ull})
      for (uint64_t len : {1ull, 63ull, 64ull, 65ull, 256ull, 4097ull, 65536ull, 100000ull}) {
        const auto tlps = split_request(addr, len, max);
        const end_tlps e = request_ends(addr, len, max);
        INFO("max " << max << " address " << addr << " length " << len);
        CHECK(e.first == tlps.front().length);
        CHECK(e.last == tlps.back().length);
      }
}

TEST_CASE("burst ends: first and last completions equal split_completion's", "[pcie][burst]") {
  for (uint32_t mrrs : {128u, 512u, 4096u})
    for (uint32_t cpl : {64u, 128u, 256u})
      for (uint32_t rcb : {64u, 128u}) {
        if (cpl < rcb) continue;
        for (uint64_t addr : {0ull, 8ull, 100ull, 4000ull, 0x10000ull - 1})
          for (uint64_t len : {1ull, 4ull, 65ull, 512ull, 5000ull, 65536ull}) {
            std::vector<chunk> cpls;
            for (const chunk& r : split_request(addr, len, mrrs))
              for (const chunk& c : split_completion(r.address, r.length, cpl, rcb))
                cpls.push_back(c);
            const end_tlps e = completion_ends(addr, len, mrrs, cpl, rcb);
            INFO("mrrs " << mrrs << " cpl " << cpl << " rcb " << rcb << " address " << addr
                         << " length " << len);
            CHECK(e.first == cpls.front().length);
            CHECK(e.last == cpls.back().length);
          }
      }
}
