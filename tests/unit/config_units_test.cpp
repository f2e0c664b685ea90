// Units: every unit, the documented errors, and no silent overflow.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "sim/config/units.h"

using namespace p2psim::config;
using Catch::Matchers::Contains;

TEST_CASE("units: parse_size reads binary and decimal units", "[config][units]") {
  CHECK(parse_size("64B") == 64);
  CHECK(parse_size("4KiB") == 4096);
  CHECK(parse_size("256MiB") == 256ull << 20);
  CHECK(parse_size("16GiB") == 16ull << 30);
  CHECK(parse_size("1TiB") == 1ull << 40);
  CHECK(parse_size("2PiB") == 2ull << 50);
  CHECK(parse_size("15EiB") == 15ull << 60);
  CHECK(parse_size("1kB") == 1000);
  CHECK(parse_size("1MB") == 1000000);
  CHECK(parse_size("1GB") == 1000000000);
  CHECK(parse_size("3TB") == 3000000000000ull);
  CHECK(parse_size("1PB") == 1000000000000000ull);
  CHECK(parse_size("4096") == 4096);
  CHECK(parse_size("0") == 0);
  CHECK(parse_size(" 256 MiB ") == 256ull << 20);
  CHECK(parse_size("1.5KiB") == 1536);
  CHECK(parse_size("0.5GiB") == 512ull << 20);
  CHECK(parse_size("18446744073709551615") == UINT64_MAX);
}

TEST_CASE("units: parse_size rejects bad sizes with a helpful message", "[config][units]") {
  CHECK_THROWS_WITH(parse_size("fast"), Contains("expected a size such as 256MiB or 4KiB"));
  CHECK_THROWS_WITH(parse_size(""), Contains("expected a size such as 256MiB or 4KiB"));
  CHECK_THROWS_WITH(parse_size("-4KiB"), Contains("must not be negative"));
  CHECK_THROWS_WITH(parse_size("4XiB"), Contains("unknown size unit 'XiB'"));
  CHECK_THROWS_WITH(parse_size("4KB"), Contains("ambiguous"));
  CHECK_THROWS_WITH(parse_size("4kib"), Contains("unknown size unit"));
  CHECK_THROWS_WITH(parse_size("1.3B"), Contains("not a whole number of bytes"));
  CHECK_THROWS_WITH(parse_size("1.5"), Contains("expected a size"));
  CHECK_THROWS_WITH(parse_size("1e3B"), Contains("expected a size"));
  CHECK_THROWS_WITH(parse_size("nan"), Contains("expected a size"));
  CHECK_THROWS_WITH(parse_size("0x10"), Contains("unknown size unit"));
}

TEST_CASE("units: parse_size never wraps on overflow", "[config][units]") {
  CHECK_THROWS_WITH(parse_size("18446744073709551616"), Contains("too large"));
  CHECK_THROWS_WITH(parse_size("16EiB"), Contains("too large"));
  CHECK_THROWS_WITH(parse_size("99999999999999999999999999999B"), Contains("too large"));
  CHECK_THROWS_WITH(parse_size("18447PB"), Contains("too large"));
  CHECK_THROWS_AS(parse_size("17179869184GiB"), std::invalid_argument);
}

TEST_CASE("units: parse_time_ns reads every unit", "[config][units]") {
  CHECK(parse_time_ns("500ps") == Approx(0.5));
  CHECK(parse_time_ns("110ns") == Approx(110));
  CHECK(parse_time_ns("1.5us") == Approx(1500));
  CHECK(parse_time_ns("1.5\xC2\xB5s") == Approx(1500));
  CHECK(parse_time_ns("2ms") == Approx(2e6));
  CHECK(parse_time_ns("1s") == Approx(1e9));
  CHECK(parse_time_ns("0") == 0);
  CHECK(parse_time_ns("0.0") == 0);
  CHECK(parse_time_ns("1e3ns") == Approx(1000));
  CHECK(parse_time_ns(".5us") == Approx(500));
}

TEST_CASE("units: parse_time_ns rejects missing units and negatives and garbage",
          "[config][units]") {
  CHECK_THROWS_WITH(parse_time_ns("110"), Contains("needs a unit"));
  CHECK_THROWS_WITH(parse_time_ns("-1ns"), Contains("must not be negative"));
  CHECK_THROWS_WITH(parse_time_ns("5min"), Contains("unknown time unit 'min'"));
  CHECK_THROWS_WITH(parse_time_ns("nan"), Contains("expected a time such as 110ns"));
  CHECK_THROWS_WITH(parse_time_ns("infns"), Contains("expected a time"));
  CHECK_THROWS_WITH(parse_time_ns("1e400ns"), Contains("out of range"));
  CHECK_THROWS_WITH(parse_time_ns("1e300s"), Contains("too large"));
  // The simulated clock holds 2^64 ps: a longer time would wrap.
  CHECK(parse_time_ns("1e7s") == Approx(1e16));
  CHECK_THROWS_WITH(parse_time_ns("1e9s"), Contains("simulated time counts picoseconds"));
  CHECK(parse_time_ns("18446743s") == Approx(1.8446743e16));
  CHECK_THROWS_WITH(parse_time_ns("18446745s"), Contains("too large"));
  CHECK_THROWS_AS(parse_time_ns("ns"), std::invalid_argument);
}

TEST_CASE("units: parse_bandwidth_gbs reads bytes and bits per second", "[config][units]") {
  CHECK(parse_bandwidth_gbs("20.8GB/s") == Approx(20.8));
  CHECK(parse_bandwidth_gbs("800MB/s") == Approx(0.8));
  CHECK(parse_bandwidth_gbs("100Gb/s") == Approx(12.5));
  CHECK(parse_bandwidth_gbs("100Gbps") == Approx(12.5));
  CHECK(parse_bandwidth_gbs("1.2TB/s") == Approx(1200));
  CHECK(parse_bandwidth_gbs("1GiB/s") == Approx(1.073741824));
  CHECK(parse_bandwidth_gbs("1MiB/s") == Approx(0.001048576));
  CHECK(parse_bandwidth_gbs("500kB/s") == Approx(0.0005));
  CHECK(parse_bandwidth_gbs("8Mb/s") == Approx(0.001));
  CHECK(parse_bandwidth_gbs("1e9B/s") == Approx(1));
  CHECK(parse_bandwidth_gbs("0") == 0);
}

TEST_CASE("units: parse_bandwidth_gbs rejects bad bandwidths", "[config][units]") {
  CHECK_THROWS_WITH(parse_bandwidth_gbs("20"), Contains("needs a unit"));
  CHECK_THROWS_WITH(parse_bandwidth_gbs("20GB"), Contains("unknown bandwidth unit 'GB'"));
  CHECK_THROWS_WITH(parse_bandwidth_gbs("5KB/s"), Contains("ambiguous"));
  CHECK_THROWS_WITH(parse_bandwidth_gbs("-1GB/s"), Contains("must not be negative"));
  CHECK_THROWS_WITH(parse_bandwidth_gbs("fast"), Contains("expected a bandwidth such as"));
  CHECK_THROWS_WITH(parse_bandwidth_gbs("1e308TB/s"), Contains("too large"));
  CHECK(parse_bandwidth_gbs("1B/s") == Approx(1e-9));
  CHECK(parse_bandwidth_gbs("0GB/s") == 0);
  CHECK_THROWS_WITH(parse_bandwidth_gbs("0.5B/s"), Contains("too small: at least 1 B/s"));
  CHECK_THROWS_WITH(parse_bandwidth_gbs("1e-300GB/s"), Contains("too small"));
}

TEST_CASE("units: parse_address reads hex and decimal", "[config][units]") {
  CHECK(parse_address("0x4000_0000_0000") == 0x400000000000ull);
  CHECK(parse_address("0X1f") == 31);
  CHECK(parse_address("4096") == 4096);
  CHECK(parse_address("0xffffffffffffffff") == UINT64_MAX);
  CHECK_THROWS_WITH(parse_address("0x1_0000_0000_0000_0000"), Contains("does not fit in 64 bits"));
  CHECK_THROWS_WITH(parse_address("18446744073709551616"), Contains("does not fit"));
  CHECK_THROWS_WITH(parse_address("0xg"), Contains("expected an address"));
  CHECK_THROWS_WITH(parse_address("0x"), Contains("expected an address"));
  CHECK_THROWS_WITH(parse_address("-1"), Contains("must not be negative"));
  CHECK_THROWS_WITH(parse_address("12ab"), Contains("expected an address"));
}

TEST_CASE("units: format_size uses exact binary units and reads back", "[config][units]") {
  CHECK(format_size(256ull << 20) == "256MiB");
  CHECK(format_size(4096) == "4KiB");
  CHECK(format_size(1536) == "1536B");
  CHECK(format_size(0) == "0B");
  CHECK(format_size(1ull << 40) == "1TiB");
  CHECK(format_size(1000000000) == "1000000000B");
  for (uint64_t v :
       {uint64_t(64), uint64_t(3) << 30, uint64_t(12345), uint64_t(UINT64_MAX), uint64_t(1) << 63})
    CHECK(parse_size(format_size(v)) == v);
  CHECK(format_address(0x400000000000ull) == "0x4000_0000_0000");
  CHECK(format_address(0x1f) == "0x1f");
  CHECK(parse_address(format_address(0x123456789abcull)) == 0x123456789abcull);
}
