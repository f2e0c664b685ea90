// NVMe SSD queues and timing (models/nvme/nvme_queues.h): the queue-full rule, round robin,
// job cutting at MDTS, the host-side backlog, and the per-command pipeline.
#include <catch2/catch.hpp>

#include <functional>
#include <queue>
#include <set>
#include <stdexcept>
#include <vector>

#include "models/nvme/nvme_queues.h"
#include "models/pcie/time_units.h"

using namespace p2psim::nvme;
using p2psim::pcie::ns_to_ps;

namespace {

constexpr uint64_t KiB = 1024;

job_request read_job(uint64_t flash, uint64_t bytes, uint64_t bus = 0x1'0000'0000) {
  job_request j;
  j.to_bus = true;
  j.segments.push_back({bus, bytes, flash});
  j.stream = 7;
  return j;
}

// The picoseconds `bytes` take at `gbs` GB/s, as memory::throughput rounds them.
uint64_t transfer_ps(uint64_t bytes, double gbs) {
  return uint64_t(bytes * (1000.0 / gbs) + 0.5);
}

// Runs every command to completion with an instant bus: a Read completes when its data is out
// of the flash, a Write's data arrives when it starts. Returns the last completion time.
uint64_t run_to_completion(nvme_queues& q, std::vector<uint64_t> rung) {
  using event = std::pair<uint64_t, uint64_t>;  // (start time, command), earliest first
  std::priority_queue<event, std::vector<event>, std::greater<>> starts;
  for (uint64_t id : rung) starts.push({q.at(id).start_ps, id});
  uint64_t last = 0;
  while (!starts.empty()) {
    const auto [at, id] = starts.top();
    starts.pop();
    const command& c = q.at(id);
    const uint64_t done =
        c.op == opcode::read ? q.read_from_flash(id) : q.write_to_flash(id, at, c.length);
    last = std::max(last, done);
    for (uint64_t next : q.complete(id, done)) starts.push({q.at(next).start_ps, next});
  }
  return last;
}

}  // namespace

TEST_CASE("nvme: a ring holds depth minus one entries", "[nvme]") {
  queue_ring r(4);
  CHECK(r.empty());
  CHECK_FALSE(r.full());
  CHECK(r.push() == 0);
  CHECK(r.push() == 1);
  CHECK(r.push() == 2);
  CHECK(r.full());  // Tail + 1 == Head: slot 3 stays unused
  CHECK(r.entries() == 3);
  CHECK_THROWS_AS(r.push(), std::logic_error);
  CHECK(r.pop() == 0);
  CHECK_FALSE(r.full());
  CHECK(r.push() == 3);  // the tail wraps
  CHECK(r.tail() == 0);
  CHECK(r.full());
  for (int i = 0; i < 3; ++i) r.pop();
  CHECK(r.empty());
  CHECK(r.head() == r.tail());
  CHECK_THROWS_AS(r.pop(), std::logic_error);
  CHECK_THROWS_AS(queue_ring(1), std::invalid_argument);
}

TEST_CASE("nvme: a job is cut at max_transfer and aligned to it", "[nvme]") {
  // 300 KiB from flash offset 100 KiB: cut at 128, 256 and 384 KiB.
  auto cmds = cut_into_commands(read_job(100 * KiB, 300 * KiB), 128 * KiB);
  REQUIRE(cmds.size() == 4);
  CHECK(cmds[0].flash_offset == 100 * KiB);
  CHECK(cmds[0].length == 28 * KiB);
  CHECK(cmds[1].flash_offset == 128 * KiB);
  CHECK(cmds[1].length == 128 * KiB);
  CHECK(cmds[2].flash_offset == 256 * KiB);
  CHECK(cmds[2].length == 128 * KiB);
  CHECK(cmds[3].flash_offset == 384 * KiB);
  CHECK(cmds[3].length == 16 * KiB);
  // Bus addresses follow the flash offsets.
  CHECK(cmds[1].segments.at(0).bus_address == 0x1'0000'0000 + 28 * KiB);
  CHECK(cmds[3].segments.at(0).bus_address == 0x1'0000'0000 + 284 * KiB);
  uint64_t total = 0;
  for (const auto& c : cmds) {
    CHECK(c.length <= 128 * KiB);
    CHECK(c.segments.size() == 1);
    CHECK(c.op == opcode::read);
    CHECK(c.stream == 7);
    total += c.length;
  }
  CHECK(total == 300 * KiB);
}

TEST_CASE("nvme: the last command of a cut job ends where the job does", "[nvme]") {
  auto cmds = cut_into_commands(read_job(0, 260 * KiB), 128 * KiB);
  REQUIRE(cmds.size() == 3);
  CHECK(cmds[2].flash_offset == 256 * KiB);
  CHECK(cmds[2].length == 4 * KiB);
}

TEST_CASE("nvme: a command spans segments contiguous in flash and not a gap", "[nvme]") {
  job_request j;
  j.to_bus = false;
  // Two pages scattered on the bus, contiguous in flash; then a gap in flash.
  j.segments = {
      {0x1000'0000, 4 * KiB, 0}, {0x2000'0000, 8 * KiB, 4 * KiB}, {0x3000'0000, 4 * KiB, 64 * KiB}};
  auto cmds = cut_into_commands(j, 128 * KiB);
  REQUIRE(cmds.size() == 2);
  CHECK(cmds[0].op == opcode::write);
  CHECK(cmds[0].flash_offset == 0);
  CHECK(cmds[0].length == 12 * KiB);
  REQUIRE(cmds[0].segments.size() == 2);
  CHECK(cmds[0].segments[1].bus_address == 0x2000'0000);
  CHECK(cmds[0].segments[1].flash_offset == 4 * KiB);
  CHECK(cmds[1].flash_offset == 64 * KiB);
  CHECK(cmds[1].length == 4 * KiB);
}

TEST_CASE("nvme: a segment crossing a max_transfer boundary is split in two commands", "[nvme]") {
  job_request j;
  j.segments = {{0xA000'0000, 8 * KiB, 0}, {0xB000'0000, 8 * KiB, 8 * KiB}};
  auto cmds = cut_into_commands(j, 4 * KiB);
  REQUIRE(cmds.size() == 4);
  CHECK(cmds[1].segments.at(0).bus_address == 0xA000'0000 + 4 * KiB);
  CHECK(cmds[2].segments.at(0).bus_address == 0xB000'0000);
  CHECK(cmds[3].flash_offset == 12 * KiB);
  CHECK_THROWS_AS(cut_into_commands(j, 3000), std::invalid_argument);
}

TEST_CASE("nvme: commands go to the queue pairs round robin", "[nvme]") {
  nvme_spec s;
  s.queue_pairs = 3;
  nvme_queues q(s);
  auto rung = q.submit(read_job(0, 7 * s.max_transfer_bytes), 0);
  REQUIRE(rung.size() == 7);
  std::vector<uint16_t> sq;
  for (uint64_t id : rung) sq.push_back(q.at(id).sq);
  CHECK(sq == std::vector<uint16_t>{1, 2, 3, 1, 2, 3, 1});
  // The next job carries on where the rotation stopped.
  auto more = q.submit(read_job(0, s.max_transfer_bytes), 0);
  CHECK(q.at(more.at(0)).sq == 2);
  CHECK(q.at(rung[0]).start_ps == ns_to_ps(s.command_latency_ns));
}

TEST_CASE("nvme: full queues hold commands in a host backlog", "[nvme]") {
  nvme_spec s;
  s.queue_pairs = 2;
  s.queue_depth = 4;  // 3 outstanding per queue
  s.max_transfer_bytes = 4 * KiB;
  nvme_queues q(s);
  auto rung = q.submit(read_job(0, 20 * 4 * KiB), 0);
  CHECK(rung.size() == 6);
  CHECK(q.outstanding() == 6);
  CHECK(q.waiting() == 14);
  CHECK(q.stats().queue_full_stalls == 14);
  CHECK(q.pairs()[0].sq.full());
  CHECK(q.pairs()[0].backlog.size() == 7);

  // Completing a command on queue 1 rings the oldest command waiting there.
  const uint64_t first = rung[0];
  REQUIRE(q.at(first).sq == 1);
  const uint64_t done = q.read_from_flash(first);
  auto next = q.complete(first, done);
  REQUIRE(next.size() == 1);
  CHECK(q.at(next[0]).sq == 1);
  CHECK(q.at(next[0]).doorbell_ps == done);
  CHECK(q.at(next[0]).queued_ps == 0);
  CHECK(q.outstanding() == 6);

  // Everything completes and never more than pairs * (depth - 1) were outstanding.
  rung.erase(rung.begin());
  rung.push_back(next[0]);
  run_to_completion(q, rung);
  CHECK(q.outstanding() == 0);
  CHECK(q.waiting() == 0);
  CHECK(q.stats().max_outstanding == 6);
  CHECK(q.stats().completions == 20);
  CHECK(q.pairs()[0].cq.size() + q.pairs()[1].cq.size() == 20);
  CHECK(q.pairs()[0].sq.empty());
}

TEST_CASE("nvme: one Read completes after command and read latency and the media transfer",
          "[nvme]") {
  nvme_spec s;
  nvme_queues q(s);
  const uint64_t t0 = 5'000'000;
  auto rung = q.submit(read_job(0, 128 * KiB), t0);
  REQUIRE(rung.size() == 1);
  const uint64_t done = q.read_from_flash(rung[0]);
  const uint64_t expected = t0 + ns_to_ps(s.command_latency_ns) + ns_to_ps(s.read_latency_ns) +
                            transfer_ps(128 * KiB, s.read_bandwidth_gbs);
  CHECK(done == expected);
  q.complete(rung[0], done);
  const completion_entry& e = q.pairs()[0].cq.at(0);
  CHECK(e.command_id == rung[0]);
  CHECK(e.sq == 1);
  CHECK(e.status == status::success);
  CHECK(e.submit_ps == t0);
  CHECK(e.complete_ps == expected);
  CHECK(q.stats().max_command_latency_ps == expected - t0);
  CHECK(q.stats().read_commands == 1);
  CHECK(q.stats().bytes_read == 128 * KiB);
}

TEST_CASE("nvme: one Write persists after its data and the media write and write latency",
          "[nvme]") {
  nvme_spec s;
  nvme_queues q(s);
  job_request j = read_job(0, 64 * KiB);
  j.to_bus = false;
  auto rung = q.submit(j, 0);
  REQUIRE(rung.size() == 1);
  const uint64_t arrived = 30'000'000;
  const uint64_t done = q.write_to_flash(rung[0], arrived, 64 * KiB);
  CHECK(done ==
        arrived + transfer_ps(64 * KiB, s.write_bandwidth_gbs) + ns_to_ps(s.write_latency_ns));
  q.complete(rung[0], done, status::success);
  CHECK(q.stats().write_commands == 1);
  CHECK(q.stats().bytes_written == 64 * KiB);
  CHECK_THROWS_AS(q.complete(rung[0], done), std::logic_error);  // completed once only
}

TEST_CASE("nvme: many commands approach the media bandwidth", "[nvme]") {
  nvme_spec s;
  s.queue_depth = 64;  // 2048 commands: more than the queues hold
  nvme_queues q(s);
  const uint64_t bytes = 256ull << 20;
  const uint64_t last = run_to_completion(q, q.submit(read_job(0, bytes), 0));
  const double gbs = double(bytes) / double(last) * 1000.0;  // bytes per ps -> GB/s
  CHECK(gbs <= s.read_bandwidth_gbs);
  CHECK(gbs > 0.99 * s.read_bandwidth_gbs);
  CHECK(q.stats().max_outstanding == s.queue_pairs * (s.queue_depth - 1));
  CHECK(q.stats().queue_full_stalls == bytes / s.max_transfer_bytes - 8 * 63);
  CHECK(q.stats().bytes_read == bytes);

  // Writes: the same at the write rate.
  nvme_queues w(s);
  job_request j = read_job(0, bytes);
  j.to_bus = false;
  const uint64_t wlast = run_to_completion(w, w.submit(j, 0));
  CHECK(double(bytes) / double(wlast) * 1000.0 > 0.99 * s.write_bandwidth_gbs);
}

TEST_CASE("nvme: latencies of concurrent commands overlap", "[nvme]") {
  nvme_spec s;
  s.read_bandwidth_gbs = 1000;  // the media is not the limit
  nvme_queues q(s);
  auto rung = q.submit(read_job(0, 16 * s.max_transfer_bytes), 0);
  REQUIRE(rung.size() == 16);
  const uint64_t last = run_to_completion(q, rung);
  // Sixteen commands take hardly longer than one: only the media transfer is shared.
  CHECK(last < ns_to_ps(s.command_latency_ns + s.read_latency_ns) +
                   16 * transfer_ps(s.max_transfer_bytes, s.read_bandwidth_gbs) + 1);
  CHECK(last < 2 * ns_to_ps(s.command_latency_ns + s.read_latency_ns));
}

TEST_CASE("nvme: an in_order job runs its commands one at a time", "[nvme]") {
  nvme_spec s;
  nvme_queues q(s);
  job_request j = read_job(0, 3 * s.max_transfer_bytes);
  j.in_order = true;
  auto rung = q.submit(j, 0);
  REQUIRE(rung.size() == 1);
  CHECK(q.waiting() == 2);
  std::vector<uint64_t> order{rung[0]};
  uint64_t id = rung[0];
  for (int i = 0; i < 2; ++i) {
    auto next = q.complete(id, q.read_from_flash(id));
    REQUIRE(next.size() == 1);
    CHECK(q.at(next[0]).flash_offset == (i + 1) * s.max_transfer_bytes);
    id = next[0];
  }
  CHECK(q.complete(id, q.read_from_flash(id)).empty());
  CHECK(q.stats().max_outstanding == 1);
}

TEST_CASE("nvme: an in_order job waits for earlier jobs", "[nvme]") {
  nvme_spec s;
  nvme_queues q(s);
  auto first = q.submit(read_job(0, 2 * s.max_transfer_bytes), 0);
  REQUIRE(first.size() == 2);
  job_request j = read_job(1 << 20, s.max_transfer_bytes);
  j.in_order = true;
  CHECK(q.submit(j, 0).empty());
  // A later job that is not in order does not wait.
  CHECK(q.submit(read_job(2 << 20, s.max_transfer_bytes), 0).size() == 1);
  CHECK(q.complete(first[0], q.read_from_flash(first[0])).empty());
  auto released = q.complete(first[1], q.read_from_flash(first[1]));
  REQUIRE(released.size() == 1);
  CHECK(q.at(released[0]).flash_offset == 1 << 20);
}

TEST_CASE("nvme: a job past the capacity is refused", "[nvme]") {
  nvme_spec s;
  s.capacity_bytes = 1 << 20;
  nvme_queues q(s);
  CHECK_THROWS_AS(q.submit(read_job((1 << 20) - 4096, 8192), 0), std::invalid_argument);
  CHECK(q.submit(read_job((1 << 20) - 4096, 4096), 0).size() == 1);
  CHECK(q.submit(read_job(0, 0), 0).empty());  // nothing to move: no command
}
