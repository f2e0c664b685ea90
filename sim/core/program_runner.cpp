#include "sim/core/program_runner.h"

#include <algorithm>

#include <fmt/format.h>
#include <sysc/kernel/sc_dynamic_processes.h>  // sc_spawn

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "sim/core/driver_gpus.h"
#include "sim/core/program_read.h"

namespace p2psim::core {

using namespace sc_core;
using nlohmann::json;

namespace {
constexpr int first_pid = 100;  // the first process of `processes`
}  // namespace

program_runner::program_runner(sc_module_name n, fabric_system& sys, const program_spec& p,
                               uint64_t seed)
    : sc_module(n),
      m_sys(sys),
      m_spec(p),
      m_seed(seed),
      m_driver([&] {
        nv::driver_config c;
        c.share_bar1 = p.driver.bar1_sharing;
        c.accept_null_callback = p.driver.null_callback;
        c.pin_base_ns = p.driver.pin_ns;
        c.pin_page_ns = p.driver.pin_page_ns;
        c.unpin_base_ns = p.driver.unpin_ns;
        c.seed = seed;
        return c;
      }()),
      m_frames(sys),
      m_os(m_driver) {
  std::vector<gpu::gpu*> by_ordinal = add_gpus(m_driver, sys);
  m_os.memory().set_physical(&m_frames);
  m_copies = std::make_unique<copy_engine_executor>(sys, by_ordinal, m_os.memory(), m_frames);
  m_os.set_copy_executor(m_copies.get());
  if (p.peer) {
    m_engine = sys.find_initiator(p.peer->device);
    m_peer_dev.name = p.peer->device;
    m_peer_dev.bdf = sys.addresses().devices.at(p.peer->device).bdf;
    m_peer_dev.iommu = sys.iommu_for(p.peer->device);
    bool map =
        p.peer->dma_map == "true" || (p.peer->dma_map == "auto" && m_peer_dev.iommu &&
                                      m_peer_dev.iommu->mode() == iommu::iommu_mode::translating);
    m_kmd = std::make_unique<peer::kmd>(&m_peer_dev, map);
    if (p.peer->wait_in_callback)
      // Simulated time passes inside cuMemFree. The DMA threads that run meanwhile set
      // `current` only around calls that do not wait, so it is as it was when this resumes.
      m_kmd->set_wait_for_idle([this](peer::kmd_region& r) {
        while (r.in_flight) wait(m_dma_done);
      });
    else
      m_kmd->set_wait_for_idle([](peer::kmd_region&) {});  // a driver with the bug
    m_rdma = std::make_unique<peer::rdma_core>();
    m_nv_mem = std::make_unique<peer::nvidia_peermem>(*m_rdma, false);
    m_nv_mem_nc = std::make_unique<peer::nvidia_peermem>(*m_rdma, true);
    m_rdma->register_client(m_nv_mem.get());  // in the module's order
    m_rdma->register_client(m_nv_mem_nc.get());
    // An invalidation inside cuMemFree waits in simulated time for the region's accesses.
    m_rdma->set_wait_for_idle([this](peer::rdma_mr& mr) {
      while (mr.in_flight) wait(m_dma_done);
    });
  }
  SC_HAS_PROCESS(program_runner);
  SC_THREAD(main);
}

// What the program left registered is deregistered as its processes end, in its OS (nothing
// runs any more: no access is in flight).
program_runner::~program_runner() {
  if (!m_rdma) return;
  kernel::running_in in(m_os);
  for (auto& [name, region] : m_mrs)
    if (region.mr) {
      kernel::as_process as(region.pid);
      region.mr->in_flight = 0;
      m_rdma->dereg_mr(region.mr);
    }
}

int program_runner::pid_of(const std::string& process) const {
  for (size_t i = 0; i < m_spec.processes.size(); ++i)
    if (m_spec.processes[i] == process) return first_pid + int(i);
  return 0;
}

peer::regcache& program_runner::cache_of(int pid) {
  auto& cache = m_caches[pid];
  if (!cache) {
    peer::regcache_params rp;
    rp.path = m_spec.peer->path == "dma_buf" ? peer::gpu_memory_path::dma_buf
                                             : peer::gpu_memory_path::nv_p2p;
    rp.enabled = m_spec.peer->cache;
    rp.tag_check = m_spec.peer->tag_check;
    rp.max_pinned_bytes = m_spec.peer->max_pinned;
    rp.max_entries = m_spec.peer->max_entries;
    rp.policy =
        m_spec.peer->policy == "fifo" ? peer::eviction_policy::fifo : peer::eviction_policy::lru;
    cache = std::make_unique<peer::regcache>(*m_kmd, rp);
  }
  return *cache;
}

void program_runner::wait_driver_time() {
  double ns = m_driver.take_elapsed_ns();
  if (ns > 0) wait(sc_time(ns, SC_NS));
  sample_bar1();
}

// Whether region `r` maps GPU `g`'s memory: a pin's page table names the GPU; an imported
// dma-buf's addresses lie in its BAR1 (behind the device's IOMMU when that translates).
bool program_runner::on_gpu(const peer::kmd_region& r, int g) {
  const auto& res = m_driver.gpu(g);
  if (r.page_table) return std::equal(res.uuid.begin(), res.uuid.end(), r.page_table->gpu_uuid);
  if (r.device_runs.empty()) return false;
  uint64_t bus = r.device_runs.front().bus;
  if (m_peer_dev.iommu && m_peer_dev.iommu->mode() == iommu::iommu_mode::translating)
    bus = m_peer_dev.iommu->translate(bus, false).address;
  return bus >= res.bar1_bus_base && bus - res.bar1_bus_base < res.bar1->size();
}

// Called after every driver call that can change BAR1: pins only grow inside a call (a cache
// evicts before it pins), so the peak is never between two samples.
void program_runner::sample_bar1() {
  uint64_t cached = 0;
  for (const auto& [pid, cache] : m_caches) cached += cache->stats().pinned_bytes;
  m_peak_cached_bytes = std::max(m_peak_cached_bytes, cached);
  for (int g = 0; g < m_driver.gpu_count(); ++g) {
    const auto& res = m_driver.gpu(g);
    auto& peak = m_bar1_peak[res.name];
    const uint64_t used = m_driver.bar1_used_bytes(g);
    if (peak.used && used <= peak.used) continue;
    peak = {used, 0, 0, used - res.bar1->reserved()};
    if (!m_kmd) continue;
    for (const auto& r : m_kmd->regions()) {
      if (r->invalidated || r->host || !on_gpu(*r, g)) continue;
      peak.requested += r->requested;
      peak.pinned += r->size;
    }
  }
}

void program_runner::main() {
  // Every driver call of the program, in this thread or the DMA threads it starts (which end
  // before it does), is made in this OS.
  kernel::running_in in(m_os);
  for (size_t i = 0; i < m_spec.steps.size(); ++i) {
    const step_spec& s = m_spec.steps[i];
    m_doing = fmt::format("step {} ({} {}) at {}", i, s.process, s.call, s.loc.str());
    uint64_t start = transport::now_ps();
    std::string result;
    m_check.clear();
    m_step_values = nullptr;
    try {
      result = run_step(s);
    } catch (const std::exception& e) {  // a model bug: reported, never a crash
      result = std::string("internal error: ") + e.what();
    }
    wait_driver_time();
    bool ok = result == s.expect && m_check.empty();
    json step = {{"index", i},
                 {"process", s.process},
                 {"call", s.call},
                 {"buffer", s.buffer},
                 {"result", result},
                 {"expect", s.expect},
                 {"ok", ok},
                 {"start_ns", start / 1000.0},
                 {"end_ns", transport::now_ps() / 1000.0}};
    if (!s.name.empty()) step["name"] = s.name;
    if (!s.pin.empty()) step["pin"] = s.pin;
    if (!s.mr.empty()) step["mr"] = s.mr;
    if (!m_step_values.is_null()) step["values"] = m_step_values;
    if (!m_check.empty()) step["check"] = m_check;
    m_steps.push_back(std::move(step));
    if (result != s.expect)
      m_errors.push_back(fmt::format("{}: step {} ({} {}) returned {}, expected {}", s.loc.str(), i,
                                     s.process, s.call, result, s.expect));
    if (!m_check.empty())
      m_errors.push_back(
          fmt::format("{}: step {} ({} {}): {}", s.loc.str(), i, s.process, s.call, m_check));
  }
  m_doing = "waiting for the program's DMAs";
  for (const auto& d : m_dmas)  // let every DMA the program started finish
    while (!d.done) wait(m_dma_done);
  m_doing = "waiting for the program's copies";
  m_copies->drain();
  for (const auto& f : m_copies->faults()) m_errors.push_back("cuMemcpy: " + f);
  for (const auto& c : m_pending_checks) check_host_bytes(c);
  m_doing.clear();
}

std::string program_runner::run_step(const step_spec& s) {
  if (s.call == "sleep") {
    wait(sc_time(s.time_ns, SC_NS));
    return "ok";
  }
  if (s.call == "link_down") {
    for (const auto& l : m_sys.links())
      if (l.name == s.device) l.link->go_down(m_sys.streams());
    return "ok";
  }
  if (s.call == "wait_dma") {
    while (!m_dmas[m_named_dma.at(s.name)].done) wait(m_dma_done);
    return "ok";
  }
  if (s.call == "callbacks") return callbacks_check(s);
  // `current` is the step's process until it returns; the DMA threads a program starts set
  // theirs only around calls that do not wait, so it is still this one whenever it resumes.
  const int pid = pid_of(s.process);
  kernel::as_process as(pid);
  if (s.call == "exit") {
    m_driver.process_exit(pid);
    kernel::current_os().dma_bufs().close_all(pid);  // its descriptors close with it
    close_verbs(pid);
    return "ok";
  }
  if (s.call == "dma" && !s.pin.empty()) {  // through a pin's bus addresses
    dma_result d;
    d.name = s.name.empty() ? fmt::format("dma{}", m_dmas.size()) : s.name;
    d.write = s.write;
    m_dmas.push_back(d);
    if (!s.name.empty()) m_named_dma[s.name] = m_dmas.size() - 1;
    return pin_dma(s, pid, m_dmas.size() - 1);
  }
  if (!s.mr.empty() && s.call == "dma") {  // a remote peer's access through a memory region
    dma_result d;
    d.name = s.name.empty() ? fmt::format("dma{}", m_dmas.size()) : s.name;
    d.write = s.write;
    d.through_mr = true;
    m_dmas.push_back(d);
    const size_t index = m_dmas.size() - 1;
    if (!s.name.empty()) m_named_dma[s.name] = index;
    if (s.wait) return mr_dma(s, index);
    sc_spawn([this, s, index] { mr_dma(s, index); });
    return "ok";
  }
  if (detail::is_rdma_call(s.call)) return rdma_step(s, pid);
  if (detail::is_ipc_call(s.call)) return ipc_step(s, pid);
  if (detail::is_api_call(s.call)) return p2p_step(s, pid);
  if (detail::is_host_call(s.call)) return host_step(s, pid);
  if (detail::is_dma_buf_call(s.call)) return dma_buf_step(s, pid);
  if (detail::is_vmm_call(s.call)) return vmm_step(s, pid);
  if (s.call == "register" || s.call == "deregister" || s.call == "dma") {
    auto it = m_buffers.find(s.buffer);
    if (it == m_buffers.end()) return "-EINVAL";  // its cuMemAlloc failed
    const buffer& b = it->second;
    uint64_t len = s.size ? s.size : b.size - std::min(s.offset, b.size);
    if (s.call == "register") {
      peer::kmd_region* r = nullptr;
      int ret = cache_of(pid).acquire(b.va + s.offset, len, &r);
      if (ret == 0) m_registered[s.buffer] = {r, pid};
      return errno_name(ret);
    }
    if (s.call == "deregister") {
      auto reg = m_registered.find(s.buffer);
      // Another process's registration is in its own cache, out of this one's reach.
      if (reg == m_registered.end() || reg->second.pid != pid) return "-EINVAL";
      cache_of(pid).release(reg->second.region);
      m_registered.erase(reg);
      return "ok";
    }
    dma_result d;
    d.name = s.name.empty() ? fmt::format("dma{}", m_dmas.size()) : s.name;
    d.write = s.write;
    m_dmas.push_back(d);
    size_t index = m_dmas.size() - 1;
    if (!s.name.empty()) m_named_dma[s.name] = index;
    if (s.wait) return dma(s, pid, index);
    sc_spawn([this, s, pid, index] { dma(s, pid, index); });
    return "ok";
  }
  if (s.call.rfind("cuMemcpy", 0) == 0) return memcpy_step(s);
  return cuda_step(s, pid);
}

}  // namespace p2psim::core
