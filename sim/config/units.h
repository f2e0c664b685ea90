// Values with units as users write them in YAML and on the command line: sizes ("256MiB"),
// times ("110ns"), bandwidths ("20.8GB/s") and addresses ("0x4000_0000_0000").
// Every parser rejects negatives, NaN, garbage, unknown units and overflow with
// std::invalid_argument whose message says what was expected; nothing wraps silently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace p2psim::config {

// Bytes. Binary units B, KiB, MiB, GiB, TiB, PiB, EiB; decimal kB, MB, GB, TB, PB (1e3..1e15);
// a bare non-negative integer is bytes. A fraction is allowed when the result is a whole number
// of bytes ("1.5KiB" = 1536). "KB" is rejected as ambiguous.
uint64_t parse_size(std::string_view text);

// Nanoseconds. Units ps, ns, us (or µs), ms, s; the unit is required except for a bare "0".
// At most 2^64 ps (about 213 days), what the simulated clock holds.
double parse_time_ns(std::string_view text);

// GB/s with GB = 1e9 bytes. Bytes: B/s, kB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s;
// bits: b/s, kb/s, Mb/s, Gb/s, Tb/s (also kbps, Mbps, Gbps, Tbps). A bare "0" is allowed;
// anything else is at least 1 B/s.
double parse_bandwidth_gbs(std::string_view text);

// Hexadecimal "0x..." or decimal; '_' may separate digits ("0x4000_0000_0000").
uint64_t parse_address(std::string_view text);

// "256MiB" when the size is an exact multiple of a binary unit, else "1000B"; parse_size reads
// the result back to the same value.
std::string format_size(uint64_t bytes);

// "0x4000_0000_0000": hexadecimal with '_' every four digits, for reports.
std::string format_address(uint64_t address);

// "110ns", "1.5us", "500ps", "0": text parse_time_ns reads back as the same value.
std::string format_time_ns(double ns);

// "900GB/s", "0": text parse_bandwidth_gbs reads back as the same value.
std::string format_bandwidth_gbs(double gbs);

}  // namespace p2psim::config
