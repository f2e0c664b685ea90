#include "models/nvme/nvme_controller.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "models/dma/completer.h"
#include "models/transport/activity.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::nvme {

using namespace sc_core;

namespace {

// The requester's job moving one command's data; local memory is the flash.
dma::dma_job data_job(const command& c, bool to_bus, uint32_t stream) {
  dma::dma_job j;
  j.write = to_bus;
  j.attrs = c.attrs;
  j.stream = stream;
  for (const bus_segment& s : c.segments)
    j.segments.push_back({s.bus_address, s.length, s.flash_offset});
  return j;
}

}  // namespace

nvme_controller::nvme_controller(sc_module_name name, const nvme_params& p,
                                 transport::tlp_pool& pool, transport::stream_log& log)
    : sc_module(name),
      port("port", *this, 0),
      m_params(p),
      m_log(log),
      m_flash(p.capacity_bytes),
      m_regs(p.bar0.size),
      m_reg_port(m_regs, dma::memory_timing{}, p.bdf, log),
      m_req(port, pool, m_flash, p.requester, log),
      m_queues(p) {
  SC_HAS_PROCESS(nvme_controller);
  SC_METHOD(run_due);
  sensitive << m_due_event;
  dont_initialize();
  SC_METHOD(written_data_arrived);
  sensitive << log.finished_event();
  dont_initialize();
}

void nvme_controller::submit(dma::dma_job job) {
  if (job.atomic)
    throw std::invalid_argument(std::string(name()) +
                                ": an NVMe SSD issues no AtomicOps; its jobs read or write flash");
  job_request r;
  r.to_bus = job.write;
  r.attrs = job.attrs;
  r.stream = job.stream;
  r.in_order = job.in_order;
  for (const dma::dma_segment& s : job.segments)
    r.segments.push_back({s.bus_address, s.length, s.local_offset});
  // The job's time starts at the doorbell, not at its first TLP: the command and flash
  // latencies are part of moving the bytes (as a storage benchmark times an I/O), and a rate
  // measured from the first TLP would leave out the first command's flash read and could
  // exceed the media's.
  m_log.started(job.stream, transport::now_ps());
  schedule_starts(m_queues.submit(r, transport::now_ps()));
}

void nvme_controller::schedule(uint64_t at_ps, phase what, uint64_t command) {
  m_due.push({at_ps, m_due_seq++, what, command});
  const uint64_t now = transport::now_ps();
  // A pending notification that is earlier stays; a later one is replaced.
  m_due_event.notify(transport::ps(at_ps > now ? at_ps - now : 0));
}

void nvme_controller::schedule_starts(const std::vector<uint64_t>& commands) {
  for (uint64_t id : commands) schedule(m_queues.at(id).start_ps, phase::start, id);
}

void nvme_controller::run_due() {
  transport::note_activity(this);
  const uint64_t now = transport::now_ps();
  while (!m_due.empty() && m_due.top().at_ps <= now) {
    const due d = m_due.top();
    m_due.pop();
    switch (d.what) {
      case phase::start:
        start(d.command);
        break;
      case phase::data_out:
        send_data(d.command);
        break;
      case phase::persisted:
        persisted(d.command);
        break;
    }
  }
  if (!m_due.empty()) m_due_event.notify(transport::ps(m_due.top().at_ps - now));
}

// The command is fetched and parsed. A Read goes to the flash; a Write fetches its data from
// the bus into the flash's backing store on a stream of its own, so the controller knows
// when all of it is in (and what was refused) before it acknowledges anything.
void nvme_controller::start(uint64_t id) {
  const command& c = m_queues.at(id);
  if (c.op == opcode::read) {
    schedule(m_queues.read_from_flash(id), phase::data_out, id);
    return;
  }
  const uint32_t s = m_log.open(c.length);
  m_log[s].submit_ps = transport::now_ps();
  m_arriving.emplace(s, id);
  m_write_stream.emplace(id, s);
  // Write data is fetched in command order, as into a drive's write buffer: the media programs
  // the first command while later ones arrive. Taking turns TLP by TLP over hundreds of
  // outstanding commands would land every one of them at the end, with the media idle until
  // then.
  dma::dma_job j = data_job(c, false, s);
  j.in_order = true;
  m_req.submit(std::move(j));
}

// A Read's data leaves as posted writes on the caller's stream: they land, and count, at the
// target. Tracked before submitting: the link may report the first write as sent at once.
void nvme_controller::send_data(uint64_t id) {
  const command& c = m_queues.at(id);
  m_outgoing[id] = outgoing{};
  m_departures.emplace(departure_key{c.stream, c.segments.front().bus_address}, id);
  m_req.submit(data_job(c, true, c.stream));
}

// A write of a Read command's data left. The completion entry is a posted write the drive
// sends after the data, so it would start when the last data write has: the command
// completes then. (A link that went down never sends the rest: no completion, as on a drive
// that lost its link.)
void nvme_controller::departed(uint32_t stream, uint64_t address, uint64_t length) {
  // A burst its link cut tells of its departure once, as its last part starts, from that
  // part's address: it began at the command's next departure, the last one at or below it.
  auto it = m_departures.upper_bound({stream, address});
  if (it == m_departures.begin()) return;
  --it;
  if (it->first.first != stream) return;
  const uint64_t id = it->second, from = it->first.second;
  const command& c = m_queues.at(id);
  outgoing& o = m_outgoing.at(id);
  const bus_segment& seg = c.segments[o.segment];
  if (address + length > seg.bus_address + seg.length) return;  // not this command's
  m_departures.erase(it);
  o.done += address + length - from;
  while (o.segment < c.segments.size() && o.done >= c.segments[o.segment].length) {
    o.done -= c.segments[o.segment].length;
    ++o.segment;
  }
  if (o.segment < c.segments.size()) {
    m_departures.emplace(departure_key{stream, c.segments[o.segment].bus_address + o.done}, id);
    return;
  }
  m_outgoing.erase(id);
  finish(id, status::success);
}

// Some stream finished: those of Write commands whose data is all in (or refused) go to the
// media, in the order their data arrived.
void nvme_controller::written_data_arrived() {
  transport::note_activity(this);
  const uint64_t now = transport::now_ps();
  std::vector<std::tuple<uint64_t, uint32_t, uint64_t>> arrived;  // (when, stream, command)
  for (auto it = m_arriving.begin(); it != m_arriving.end();) {
    const transport::stream_record& r = m_log[it->first];
    if (!r.finished()) {
      ++it;
      continue;
    }
    // The last byte may be stored a little after the stream's accounting finished.
    arrived.emplace_back(std::max(now, r.last_land_ps), it->first, it->second);
    it = m_arriving.erase(it);
  }
  std::sort(arrived.begin(), arrived.end());
  for (const auto& [when, stream, id] : arrived)
    schedule(m_queues.write_to_flash(id, when, m_log[stream].landed_bytes), phase::persisted, id);
}

// A Write is persisted: its completion entry is posted, and only then do its bytes count on
// the caller's stream, the undelivered ones as what they were on the bus.
void nvme_controller::persisted(uint64_t id) {
  const uint32_t caller = m_queues.at(id).stream;
  const uint32_t own = m_write_stream.at(id);
  m_write_stream.erase(id);
  const transport::stream_record r = m_log[own];
  finish(id, r.undelivered_bytes() ? status::data_transfer_error : status::success);
  const uint64_t now = transport::now_ps();
  if (r.landed_bytes) m_log.landed(caller, r.landed_bytes, now);
  if (r.failed_bytes) m_log.failed(caller, r.failed_bytes, now);
  if (r.lost_bytes) m_log.lost(caller, r.lost_bytes, now);
  if (r.timed_out_bytes) m_log.timed_out(caller, r.timed_out_bytes, now);
}

void nvme_controller::finish(uint64_t id, status s) {
  schedule_starts(m_queues.complete(id, transport::now_ps(), s));
}

void nvme_controller::receive(int, tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  if (pcie::is_completion(h.type)) {
    m_req.completion(gp);
    return;
  }
  if (!m_params.bar0.contains(h.address)) {
    ++m_queues.stats().unsupported_requests;
    dma::refuse_request(port, gp, m_params.bdf, pcie::cpl_status::ur, SC_ZERO_TIME, &m_log);
    return;
  }
  ++m_queues.stats().bar0_accesses;
  port.free_buffer(gp, m_reg_port.serve(port, gp, h.address - m_params.bar0.base));
  gp.release();
}

// Never ahead (allows_start_ahead is false): the requester acts on the departure now.
void nvme_controller::sent(int, tlm::tlm_generic_payload& gp, uint64_t) {
  const auto& h = transport::hdr(gp);
  if (pcie::is_completion(h.type) || h.requester_id != m_params.bdf) return;
  m_req.sent(gp);
  const uint32_t stream = transport::meta(gp).stream;
  if (h.type == pcie::tlp_type::mwr) departed(stream, h.address, h.length);
}

}  // namespace p2psim::nvme
