#include "sim/litmus/litmus_run.h"

#include <fmt/format.h>

#include <sysc/kernel/sc_dynamic_processes.h>  // sc_spawn
#include <systemc>

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"
#include "models/driver/nvidia/nv-p2p.h"
#include "models/driver/nvidia/nvidia_driver.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "sim/config/error.h"
#include "sim/core/copy_engine_executor.h"
#include "sim/core/driver_gpus.h"
#include "sim/core/endpoints.h"
#include "sim/core/system.h"
#include "sim/topology/address_map.h"

namespace p2psim::litmus {

using namespace sc_core;

namespace {

constexpr kernel::pid_t litmus_pid = 100;        // every agent's CUDA calls come from one process
constexpr uint64_t scratch_bytes = 16ull << 20;  // top of a DMA agent's memory: read buffers

std::vector<uint8_t> bytes_of(uint64_t v, uint64_t size) {
  std::vector<uint8_t> b(size);
  for (uint64_t i = 0; i < size; ++i) b[i] = uint8_t(v >> (8 * (i % 8)));
  return b;
}

// 8-byte little-endian words; all equal -> that value, else torn.
value value_of(const std::vector<uint8_t>& b) {
  auto word = [&](uint64_t at) {
    uint64_t v = 0;
    for (uint64_t i = 0; i < 8 && at + i < b.size(); ++i) v |= uint64_t(b[at + i]) << (8 * i);
    return v;
  };
  auto all = [&](auto expected) {
    for (uint64_t at = 0; at < b.size(); at += 8) {
      uint64_t rest = std::min<uint64_t>(8, b.size() - at);
      uint64_t mask = rest == 8 ? ~0ull : (1ull << (8 * rest)) - 1;
      if (word(at) != (expected(at / 8) & mask)) return false;
    }
    return true;
  };
  const uint64_t first = word(0);
  if (all([&](uint64_t) { return first; })) return value::of(first);
  if (all([](uint64_t i) { return i; })) return {value::ramp, 0};
  return {value::torn, 0};
}

void ignore_free(void*) {}

struct placed {
  const location_spec* spec = nullptr;
  memory::backing_store* store = nullptr;
  uint64_t offset = 0;  // in store
  uint64_t bus = 0;     // where peers reach it
  gpu::gpu* gpu = nullptr;
  root_complex::cpu_cache* cache = nullptr;  // host memory: what the CPUs hold of it
  int ordinal = -1;                          // GPU: CUDA device ordinal
  CUdeviceptr va = 0;  // GPU: the allocation's address + the location's offset
};

class harness : public sc_module {
 public:
  harness(sc_module_name n, const litmus_spec& t, core::fabric_system& sys)
      : sc_module(n),
        m_t(t),
        m_sys(sys),
        m_driver(nv::driver_config{}),
        m_frames(sys),
        m_os(m_driver) {
    m_os.memory().set_physical(&m_frames);
    std::vector<gpu::gpu*> by_ordinal = core::add_gpus(m_driver, sys);
    for (size_t i = 0; i < by_ordinal.size(); ++i) {
      m_ordinal[m_driver.gpu(int(i)).name] = int(i);
      by_ordinal[i]->visibility().set_kernels_observe(true);  // kernel agents may be reading
    }
    m_copies =
        std::make_unique<core::copy_engine_executor>(sys, by_ordinal, m_os.memory(), m_frames);
    m_os.set_copy_executor(m_copies.get());
    kernel::running_in in(m_os);
    kernel::as_process as(litmus_pid);
    check(cuInit(0), "cuInit");
    for (const auto& [name, ordinal] : m_ordinal) {
      CUdevice dev = 0;
      check(cuDeviceGet(&dev, ordinal), "cuDeviceGet");
      check(cuCtxCreate(&m_ctx[name], 0, dev), "cuCtxCreate");
    }
    for (const auto& l : t.locations) place(l);
    for (const auto& a : t.agents) {
      m_done[a.name] = false;
      m_start[a.name] = std::make_unique<sc_event>();
    }
    for (const auto& a : t.agents) {
      const agent_spec* ap = &a;
      sc_spawn([this, ap] { agent(*ap); }, sc_gen_unique_name(a.name.c_str()));
    }
  }
  // Every agent's CUDA calls come from one process of this OS.
  kernel::os& os() { return m_os; }

  run_outcome outcome() const {
    run_outcome o;
    for (const auto& r : m_t.registers()) {
      auto it = m_regs.find(r);
      o.values[r] = it == m_regs.end() ? value{} : it->second;
    }
    for (const auto& n : m_t.cond.names())
      if (m_t.find_location(n)) o.values[n] = value_of(load(m_loc.at(n)));
    for (const auto& [name, done] : m_done)
      if (!done) o.blocked.push_back(name);
    o.error = m_error;
    return o;
  }

 private:
  static void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) throw std::runtime_error(fmt::format("{} failed ({})", what, int(r)));
  }

  // GPU memory as an application gets it for RDMA: cuMemAlloc, SYNC_MEMOPS when asked, and
  // the pages pinned for peers with nvidia_p2p_get_pages (their BAR1 addresses).
  void place(const location_spec& l) {
    placed p;
    p.spec = &l;
    if (auto* g = m_sys.find_gpu(l.memory)) {
      cuCtxSetCurrent(m_ctx.at(l.memory));
      CUdeviceptr base = 0;
      check(cuMemAlloc(&base, nv::gpu_page_bytes), "cuMemAlloc");
      if (l.sync_memops) {
        unsigned int one = 1;
        check(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, base),
              "cuPointerSetAttribute");
      }
      nvidia_p2p_page_table* pt = nullptr;
      if (int r = nvidia_p2p_get_pages(0, 0, base, nv::gpu_page_bytes, &pt, ignore_free, nullptr))
        throw std::runtime_error(fmt::format("nvidia_p2p_get_pages failed ({})", r));
      auto where = m_driver.vram_of(litmus_pid, base);
      p.gpu = g;
      p.ordinal = m_ordinal.at(l.memory);
      p.store = &g->vram();
      p.offset = where->second + l.offset;
      p.bus = pt->pages[0]->physical_address + l.offset;
      p.va = base + l.offset;
    } else if (auto* d = m_sys.find_device(l.memory)) {  // memory a BAR exposes
      p.store = d->exposed().store;
      p.offset = l.offset;
      p.bus = d->exposed().bus_base + l.offset;
    } else {
      auto* rc = m_sys.find_socket(l.memory);
      p.store = &rc->memory();
      p.cache = &rc->cpu_cache();
      p.offset = l.offset;
      p.bus = rc->params().memory.base + l.offset;
    }
    std::vector<uint8_t> init = bytes_of(l.init, l.size);
    if (l.ramp)
      for (uint64_t i = 0; i < l.size; ++i) init[i] = uint8_t((i / 8) >> (8 * (i % 8)));
    p.store->write(p.offset, init);
    m_loc[l.name] = p;
  }

  std::vector<uint8_t> load(const placed& p) const {
    std::vector<uint8_t> b(p.spec->size);
    p.store->read(p.offset, b);
    return b;
  }
  // A CPU load: through what the CPUs hold cached (a line a No Snoop write did not drop).
  std::vector<uint8_t> cpu_load(const placed& p) const {
    std::vector<uint8_t> b(p.spec->size);
    p.cache->load(*p.store, p.offset, b);
    return b;
  }

  void agent(const agent_spec& a) {
    if (a.launched) wait(*m_start.at(a.name));
    try {
      switch (a.kind) {
        case agent_kind::dma:
          dma_agent(a);
          break;
        case agent_kind::kernel:
          kernel_agent(a);
          break;
        case agent_kind::cpu:
          cpu_agent(a);
          break;
      }
      m_done[a.name] = true;
    } catch (const std::exception& e) {
      if (m_error.empty()) m_error = fmt::format("agent {}: {}", a.name, e.what());
    }
  }

  // Polls `look` every poll_ns until it gives `want`; the register gets the last value seen
  // only when it matched (unset after a timeout).
  template <class F>
  void await(const op_spec& o, F look) {
    const sc_time limit = sc_time_stamp() + sc_time(o.timeout_ns, SC_NS);
    while (true) {
      value v = look();
      if (v == value::of(o.value)) {
        if (!o.reg.empty()) m_regs[o.reg] = v;
        return;
      }
      if (sc_time_stamp() >= limit) return;
      wait(sc_time(o.poll_ns, SC_NS));
    }
  }

  // A DMA device (or a GPU's copy engine) works through its program in order: fabric
  // requests go out in program order and overlap; `fence` waits for all of them.
  void dma_agent(const agent_spec& a) {
    dma::dma_initiator& dev = *m_sys.find_initiator(a.device);
    uint64_t scratch = core::initiator_capacity(m_sys.topology(), a.device) - scratch_bytes;
    struct pending_read {
      std::string reg;
      uint64_t local = 0, size = 0;
      uint32_t stream = 0;
    };
    struct request {
      uint32_t stream = 0;
      bool write = true;
    };
    std::vector<request> outstanding;
    std::vector<pending_read> reads;
    transport::stream_log& log = m_sys.streams();
    auto resolve_reads = [&] {
      for (const auto& r : reads) {
        if (log[r.stream].failed_bytes) continue;  // refused: the register stays unset
        std::vector<uint8_t> b(r.size);
        dev.local_memory().read(r.local, b);
        m_regs[r.reg] = value_of(b);
      }
      reads.clear();
    };
    // A fence completes earlier requests as the requester sees them: a read when its data is
    // in, a posted write once all its TLPs are on the link (queued there, later TLPs stay
    // behind it where the ordering table says so).
    auto fence = [&] {
      for (const auto& r : outstanding) {
        if (!r.write) {
          transport::wait_until_landed(log, r.stream);
          continue;
        }
        while (!log[r.stream].has_started || !dev.requester().issued(r.stream))
          wait(sc_time(1, SC_NS));
      }
      outstanding.clear();
      resolve_reads();
    };
    std::vector<uint32_t> all;  // at the end, everything lands before the run is over
    for (const auto& o : a.program) {
      const placed* p = o.location.empty() ? nullptr : &m_loc.at(o.location);
      const bool local = p && p->spec->memory == a.device;
      switch (o.kind) {
        case op_kind::write:
        case op_kind::read:
        case op_kind::atomic: {
          if (local) {
            if (o.kind == op_kind::write)
              p->store->write(p->offset, bytes_of(o.value, p->spec->size));
            else
              m_regs[o.reg] = value_of(load(*p));
            break;
          }
          const uint64_t size = p->spec->size;
          dma::dma_job job;
          job.write = o.kind == op_kind::write;
          job.in_order = true;
          job.attrs.relaxed_ordering = o.relaxed_ordering;
          job.attrs.id_based_ordering = o.id_based_ordering;
          job.attrs.no_snoop = o.no_snoop;
          job.attrs.traffic_class = uint8_t(o.traffic_class);
          uint64_t local_at = scratch;  // write: the data; read: where it lands
          if (!o.into.empty()) local_at = m_loc.at(o.into).offset;
          if (o.kind == op_kind::atomic) {
            std::vector<uint8_t> operand = bytes_of(o.value, size);
            if (o.atomic == atomic_op::cas) {  // compare first, then the new value
              operand = bytes_of(o.compare, size);
              auto swap = bytes_of(o.value, size);
              operand.insert(operand.end(), swap.begin(), swap.end());
            }
            job.atomic = o.atomic == atomic_op::fetch_add ? pcie::tlp_type::fetch_add
                         : o.atomic == atomic_op::swap    ? pcie::tlp_type::swap
                                                          : pcie::tlp_type::cas;
            dev.local_memory().write(scratch, operand);
            job.segments.push_back({p->bus, operand.size(), scratch});
          } else {
            job.segments.push_back({p->bus, size, local_at});
            if (job.write) dev.local_memory().write(scratch, bytes_of(o.value, size));
          }
          job.stream = log.open(size);
          log[job.stream].submit_ps = transport::now_ps();
          outstanding.push_back({job.stream, job.write});
          all.push_back(job.stream);
          if (!job.write && !o.reg.empty()) reads.push_back({o.reg, scratch, size, job.stream});
          if (local_at == scratch) scratch += (2 * size + 63) / 64 * 64;
          dev.submit(std::move(job));
          break;
        }
        case op_kind::await:
          await(o, [&] { return value_of(load(*p)); });
          break;
        case op_kind::fence:
          fence();
          break;
        case op_kind::sleep:
          wait(sc_time(o.time_ns, SC_NS));
          break;
        default:
          break;  // the loader allows nothing else here
      }
    }
    for (uint32_t id : all) transport::wait_until_landed(log, id);
    resolve_reads();
  }

  // A GPU kernel sees GPU memory through the RDMA visibility model: its own GPU's as the
  // owner, another GPU's as a peer (guide 5.7;
  // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING).
  void kernel_agent(const agent_spec& a) {
    auto look = [&](const placed& p) {
      std::vector<uint8_t> b(p.spec->size);
      p.gpu->visibility().kernel_read(
          p.offset, b, p.spec->memory == a.device ? gpu::consumer::owner : gpu::consumer::peer);
      return value_of(b);
    };
    for (const auto& o : a.program) {
      const placed* p = o.location.empty() ? nullptr : &m_loc.at(o.location);
      switch (o.kind) {
        case op_kind::write:
          p->gpu->visibility().kernel_write(p->offset, bytes_of(o.value, p->spec->size));
          break;
        case op_kind::read:
          m_regs[o.reg] = look(*p);
          break;
        case op_kind::await:
          await(o, [&] { return look(*p); });
          break;
        case op_kind::sleep:
          wait(sc_time(o.time_ns, SC_NS));
          break;
        default:
          break;
      }
    }
  }

  // A CPU thread: loads and stores to host memory through the CPUs' caches
  // (root_complex/cpu_cache.h), and CUDA calls in its context.
  void cpu_agent(const agent_spec& a) {
    auto cuda = [&](CUresult r, const char* what) {
      if (r != CUDA_SUCCESS) throw std::runtime_error(fmt::format("{} returned {}", what, int(r)));
    };
    auto enter = [&] { cuCtxSetCurrent(m_ctx.at(a.context)); };
    for (const auto& o : a.program) {
      const placed* p = o.location.empty() ? nullptr : &m_loc.at(o.location);
      switch (o.kind) {
        case op_kind::write:
          p->cache->store(*p->store, p->offset, bytes_of(o.value, p->spec->size));
          break;
        case op_kind::read:
          m_regs[o.reg] = value_of(cpu_load(*p));
          break;
        case op_kind::await:
          await(o, [&] { return value_of(cpu_load(*p)); });
          break;
        case op_kind::flush_cache:
          p->cache->flush(p->offset, p->spec->size);
          break;
        case op_kind::sleep:
          wait(sc_time(o.time_ns, SC_NS));
          break;
        case op_kind::launch: {
          const agent_spec& b = *m_t.find_agent(o.agent);
          // A kernel launch is a CPU-initiated work submission: RDMA writes that have landed
          // on its GPU become visible to it (guide 5.7).
          if (b.kind == agent_kind::kernel) {
            m_sys.find_gpu(b.device)->visibility().cpu_sync();
            // On the context's NULL stream: the copies queued there before it are complete.
            if (auto c = m_ctx.find(a.context); c != m_ctx.end())
              m_copies->stream_goes_on({litmus_pid, c->second, nullptr, false});
          }
          m_start.at(b.name)->notify(SC_ZERO_TIME);
          break;
        }
        case op_kind::sync:
          enter();
          cuda(cuCtxSynchronize(), "cuCtxSynchronize");
          break;
        case op_kind::flush:
          enter();
          cuda(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                          o.scope == "owner"
                                              ? CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER
                                              : CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES),
               "cuFlushGPUDirectRDMAWrites");
          break;
        case op_kind::copy: {
          enter();
          const placed& to = m_loc.at(o.to);
          const uint64_t n = p->spec->size;
          cuda(
              o.async ? cuMemcpyDtoDAsync(to.va, p->va, n, nullptr) : cuMemcpyDtoD(to.va, p->va, n),
              "cuMemcpyDtoD");
          break;
        }
        case op_kind::fence:
        case op_kind::atomic:
          break;  // the loader allows these to DMA agents only
      }
    }
  }

  const litmus_spec& m_t;
  core::fabric_system& m_sys;
  nv::nvidia_driver m_driver;
  core::host_frames m_frames;  // outlives m_os, whose memory it holds
  kernel::os m_os;
  std::unique_ptr<core::copy_engine_executor> m_copies;
  std::map<std::string, int> m_ordinal;
  std::map<std::string, CUcontext> m_ctx;
  std::map<std::string, placed> m_loc;
  std::map<std::string, value> m_regs;
  std::map<std::string, bool> m_done;
  std::map<std::string, std::unique_ptr<sc_event>> m_start;
  std::string m_error;
};

}  // namespace

run_outcome run_once(const litmus_spec& t, const topo::topology& topo,
                     const pcie::order_policy& order) {
  topo::address_map amap = topo::enumerate(topo);
  core::fabric_system sys(topo, amap, false, order);
  harness h("litmus", t, sys);
  {
    // The agents' threads all call CUDA as the one litmus process, so `current` stays it.
    kernel::running_in in(h.os());
    kernel::as_process as(litmus_pid);
    sc_start();
  }
  run_outcome o = h.outcome();
  o.simulated_ns = sc_time_stamp().to_seconds() * 1e9;
  return o;
}

std::string outcome_key(const litmus_spec& t, const run_outcome& o) {
  return outcome_key(t, o.values);
}

}  // namespace p2psim::litmus
