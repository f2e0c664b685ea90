// The steps that call the driver API directly: nv-p2p calls on named pins, pointer
// attributes with expected and stored values, DMA through a pin's bus addresses, and the
// free callbacks' record. Each returns what the model returned; it never decides a result
// itself (docs/driver-model.md says what each call returns).
#include <cstring>

#include <fmt/format.h>

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "sim/core/byte_pattern.h"
#include "sim/core/program_runner.h"

namespace p2psim::core {

using namespace sc_core;
using nlohmann::json;

namespace {

// Small numbers read best in decimal, addresses and tokens in hex.
std::string show(uint64_t v) {
  return v < 0x10000 ? std::to_string(v) : fmt::format("{:#x}", v);
}

// The callback of a pin that a callback makes: it is put back at once, so nothing revokes it.
void ignore_free_callback(void*) {}

// How many bytes of a cuPointerGetAttribute(s) value, and whether it is a signed int.
struct value_shape {
  size_t bytes;
  bool is_signed;
};
value_shape shape_of(int attribute) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      return {sizeof(unsigned int), false};
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      return {sizeof(int), true};
    default:  // pointers, sizes, BUFFER_ID; P2P_TOKENS is read on its own
      return {sizeof(uint64_t), false};
  }
}

}  // namespace

const std::string& program_runner::peer_name(const std::string& engine) const {
  static const std::string none;
  if (!engine.empty()) return engine;
  return m_spec.peer ? m_spec.peer->device : none;
}

pci_dev* program_runner::peer_device(const std::string& engine) {
  const std::string& name = peer_name(engine);
  if (name.empty()) return nullptr;  // no peer named and no peer_driver: the reader refuses it
  if (m_spec.peer && name == m_spec.peer->device) return &m_peer_dev;
  auto [it, made] = m_peer_devices.try_emplace(name);
  if (made) {  // the struct pci_dev its kernel driver would pass (kernel.h)
    it->second.name = name;
    it->second.bdf = m_sys.addresses().devices.at(name).bdf;
    it->second.iommu = m_sys.iommu_for(name);
  }
  return &it->second;
}

program_runner::pin_record* program_runner::pin_of(const step_spec& s) {
  if (s.null_pin) return nullptr;
  auto it = m_pins.find(s.pin);
  return it == m_pins.end() ? nullptr : it->second;
}

std::pair<uint64_t, uint32_t> program_runner::tokens_of(const tokens_spec& t,
                                                        const pin_record* pin) const {
  switch (t.what) {
    case tokens_spec::kind::literal:
      return {t.p2p_token, t.va_space_token};
    case tokens_spec::kind::named: {
      auto it = m_stored.find(t.name);  // a failed read left them 0, as in a zeroed struct
      if (it == m_stored.end()) return {0, 0};
      return {it->second.value, it->second.va_space_token};
    }
    case tokens_spec::kind::of_the_pin:
      return pin ? std::pair{pin->p2p_token, pin->va_space_token} : std::pair<uint64_t, uint32_t>{};
    case tokens_spec::kind::zero:
      break;
  }
  return {0, 0};
}

void program_runner::pin_free_callback(void* data) {
  auto* p = static_cast<pin_record*>(data);
  p->runner->run_free_callback(*p);
}

// Runs as the process whose free revoked the pin, inside its cuMemFree (guide 5.3).
void program_runner::run_free_callback(pin_record& p) {
  ++p.callbacks;
  if (p.callback == "count") return;
  if (p.callback == "put_pages") {  // the mistake 6.3 warns of, instead of freeing the table
    p.callback_result =
        errno_name(nvidia_p2p_put_pages(p.p2p_token, p.va_space_token, p.va, p.table));
    return;
  }
  if (p.callback == "get_pages") {  // nv-p2p calls are allowed here (docs/driver-model.md)
    uint64_t va = p.va, length = p.length, token = p.p2p_token;
    uint32_t va_space = p.va_space_token;
    if (!p.callback_buffer.empty()) {  // another buffer, of the process running the callback
      auto it = m_buffers.find(p.callback_buffer);
      va = it == m_buffers.end() ? 0 : it->second.va;
      length = it == m_buffers.end() ? 0 : it->second.size;
      token = 0, va_space = 0;
    }
    nvidia_p2p_page_table_t* t = nullptr;
    int r = nvidia_p2p_get_pages(token, va_space, va, length, &t, &ignore_free_callback, nullptr);
    p.callback_result = errno_name(r);
    if (r == 0) nvidia_p2p_put_pages(token, va_space, va, t);  // it only shows the call works
  }
  // What the guide's callback does (6.4): free the DMA mappings and the page table.
  for (auto& [peer, m] : p.mappings) nvidia_p2p_free_dma_mapping(m.mapping);
  nvidia_p2p_free_page_table(p.table);
}

std::string program_runner::get_pages_step(const step_spec& s, int pid) {
  const bool persistent = s.call == "nvidia_p2p_get_pages_persistent";
  uint64_t va = s.va, length = s.size;
  if (!s.has_va) {
    auto it = m_buffers.find(s.buffer);
    const buffer b = it == m_buffers.end() ? buffer{0, 0, pid, false} : it->second;
    va = b.va + s.offset;
    if (!s.has_size) length = b.size - std::min(s.offset, b.size);
  }
  auto rec = std::make_unique<pin_record>();
  rec->runner = this;
  rec->name = s.pin;
  rec->callback = s.callback;
  rec->callback_buffer = s.callback_buffer;
  rec->va = va;
  rec->length = length;
  rec->persistent = persistent;
  std::tie(rec->p2p_token, rec->va_space_token) = tokens_of(s.tokens, nullptr);
  nvidia_p2p_page_table_t* table = nullptr;
  nvidia_p2p_page_table_t** out = s.null_pin ? nullptr : &table;
  int r = persistent ? nvidia_p2p_get_pages_persistent(va, length, out, s.flags)
                     : nvidia_p2p_get_pages(rec->p2p_token, rec->va_space_token, va, length, out,
                                            s.callback == "null" ? nullptr : &pin_free_callback,
                                            rec.get());
  if (r == 0 && table) {  // copy what the table says now: it dies with a revocation
    rec->table = table;
    for (uint32_t i = 0; i < table->entries; ++i) {
      const uint64_t bus = table->pages[i]->physical_address;
      rec->bus.push_back(bus);
      vram_piece frame;  // length 0: no VRAM found behind the page
      for (int g = 0; g < m_driver.gpu_count(); ++g) {
        const auto& res = m_driver.gpu(g);
        if (!std::equal(res.uuid.begin(), res.uuid.end(), table->gpu_uuid)) continue;
        if (auto v = res.bar1->translate(bus - res.bar1_bus_base))
          frame = {res.vram, *v, nv::gpu_page_bytes};
      }
      rec->frames.push_back(frame);
    }
  }
  if (!s.null_pin) m_pins[s.pin] = rec.get();  // a failed get_pages leaves the table NULL
  m_pin_records.push_back(std::move(rec));
  return errno_name(r);
}

std::string program_runner::p2p_step(const step_spec& s, int pid) {
  if (s.call == "nvidia_p2p_get_pages" || s.call == "nvidia_p2p_get_pages_persistent")
    return get_pages_step(s, pid);
  if (s.call.rfind("cuPointer", 0) == 0) return attribute_step(s, pid);
  pin_record* p = pin_of(s);
  nvidia_p2p_page_table_t* table = p ? p->table : nullptr;
  const uint64_t va = s.has_va ? s.va : p ? p->va : 0;
  // The mapping a pin got for a peer; NULL if it never got one (its dma_map_pages failed).
  auto mapping_of = [&](const std::string& engine) -> nvidia_p2p_dma_mapping_t* {
    if (s.null_mapping || !p) return nullptr;
    auto it = p->mappings.find(peer_name(engine));
    return it == p->mappings.end() ? nullptr : it->second.mapping;
  };
  auto peer_of_step = [&] { return s.null_peer ? nullptr : peer_device(s.peer); };
  if (s.call == "nvidia_p2p_put_pages") {
    auto [token, va_space] = tokens_of(s.tokens, p);
    return errno_name(nvidia_p2p_put_pages(token, va_space, va, table));
  }
  if (s.call == "nvidia_p2p_put_pages_persistent")
    return errno_name(nvidia_p2p_put_pages_persistent(va, table, s.flags));
  if (s.call == "nvidia_p2p_free_page_table") return errno_name(nvidia_p2p_free_page_table(table));
  if (s.call == "nvidia_p2p_dma_map_pages") {
    nvidia_p2p_dma_mapping_t* m = nullptr;
    int r = nvidia_p2p_dma_map_pages(peer_of_step(), table, &m);
    if (r == 0 && m && p) {
      dma_mapping_copy copy{m,
                            std::vector<uint64_t>(m->dma_addresses, m->dma_addresses + m->entries)};
      p->mappings[peer_name(s.peer)] = std::move(copy);
    }
    return errno_name(r);
  }
  if (s.call == "nvidia_p2p_dma_unmap_pages")
    return errno_name(nvidia_p2p_dma_unmap_pages(
        peer_of_step(), table, mapping_of(s.mapping.empty() ? s.peer : s.mapping)));
  // nvidia_p2p_free_dma_mapping
  return errno_name(nvidia_p2p_free_dma_mapping(mapping_of(s.peer)));
}

std::string program_runner::check_value(const attribute_spec& a, uint64_t value,
                                        uint32_t va_space_token) {
  const bool tokens = a.attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS;
  auto text = [&](uint64_t v, uint32_t vas) {
    return tokens ? fmt::format("{{p2pToken {:#x}, vaSpaceToken {}}}", v, vas) : show(v);
  };
  const value_spec& want = a.value;
  switch (want.what) {
    case value_spec::kind::any:
      return "";
    case value_spec::kind::number:
    case value_spec::kind::buffer: {
      uint64_t expected = want.number;
      if (want.what == value_spec::kind::buffer) {
        auto it = m_buffers.find(want.ref);
        expected = (it == m_buffers.end() ? 0 : it->second.va) + want.offset;
      }
      if (value == expected) return "";
      return fmt::format("{} is {}, expected {}", a.name, show(value), show(expected));
    }
    case value_spec::kind::same_as:
    case value_spec::kind::differs_from: {
      auto it = m_stored.find(want.ref);
      if (it == m_stored.end() || !it->second.read)
        return fmt::format("{}: '{}' was never read (the step that stores it failed)", a.name,
                           want.ref);
      const bool same =
          value == it->second.value && (!tokens || va_space_token == it->second.va_space_token);
      if (same == (want.what == value_spec::kind::same_as)) return "";
      return fmt::format("{} is {}, expected {} '{}' ({})", a.name, text(value, va_space_token),
                         same ? "a value other than" : "the same as", want.ref,
                         text(it->second.value, it->second.va_space_token));
    }
  }
  return "";
}

std::string program_runner::attribute_step(const step_spec& s, int pid) {
  uint64_t ptr = s.va;
  if (!s.has_va) {
    auto it = m_buffers.find(s.buffer);
    ptr = (it == m_buffers.end() ? 0 : it->second.va) + s.offset;  // a failed alloc: NULL
  }
  if (s.call == "cuPointerSetAttribute") {
    const unsigned int v = s.set_value;
    return step_result(
        cuPointerSetAttribute(&v, CUpointer_attribute(s.attributes.front().attribute), ptr));
  }
  (void)pid;
  // One zeroed, aligned slot per attribute, large enough for any of them.
  struct slot {
    alignas(8) unsigned char bytes[16] = {};
  };
  std::vector<slot> slots(s.attributes.size());
  std::vector<CUpointer_attribute> attrs;
  std::vector<void*> data;
  for (size_t i = 0; i < s.attributes.size(); ++i) {
    attrs.push_back(CUpointer_attribute(s.attributes[i].attribute));
    data.push_back(slots[i].bytes);
  }
  CUresult r = s.call == "cuPointerGetAttribute"
                   ? cuPointerGetAttribute(data.front(), attrs.front(), ptr)
                   : cuPointerGetAttributes(unsigned(attrs.size()), attrs.data(), data.data(), ptr);
  if (r != CUDA_SUCCESS) return step_result(r);  // no values: nothing to check or store
  json values = json::object();
  for (size_t i = 0; i < s.attributes.size(); ++i) {
    const attribute_spec& a = s.attributes[i];
    uint64_t value = 0;
    uint32_t va_space = 0;
    if (a.attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS) {
      CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t;
      std::memcpy(&t, slots[i].bytes, sizeof t);
      value = t.p2pToken, va_space = t.vaSpaceToken;
      values[a.name] = {{"p2pToken", value}, {"vaSpaceToken", va_space}};
    } else {
      const value_shape shape = shape_of(a.attribute);
      if (shape.bytes == 4) {
        uint32_t v32;
        std::memcpy(&v32, slots[i].bytes, 4);
        value = shape.is_signed ? uint64_t(int64_t(int32_t(v32))) : v32;
      } else {
        std::memcpy(&value, slots[i].bytes, 8);
      }
      values[a.name] = value;
    }
    std::string why = check_value(a, value, va_space);
    if (!why.empty()) m_check += (m_check.empty() ? "" : "; ") + why;
    if (!a.store.empty()) m_stored[a.store] = {value, va_space, true};
  }
  m_step_values = values;
  return "ok";
}

std::string program_runner::callbacks_check(const step_spec& s) {
  auto it = m_pins.find(s.pin);
  const pin_record* p = it == m_pins.end() ? nullptr : it->second;
  const int ran = p ? p->callbacks : 0;
  if (ran != s.count)
    m_check =
        fmt::format("the free callback of pin '{}' ran {} times, expected {}", s.pin, ran, s.count);
  const std::string got = p ? p->callback_result : "";
  if (!s.returned.empty() && got != s.returned)
    m_check += fmt::format(
        "{}the call inside the free callback of pin '{}' returned {}, "
        "expected {}",
        m_check.empty() ? "" : "; ", s.pin, got.empty() ? "nothing (it never ran)" : got,
        s.returned);
  return "ok";
}

// DMA to or from a pin's bus addresses (the peer's DMA mapping if the pin has one for it,
// else the page table's BAR1 addresses), without the registration cache: where the bytes
// land is what the driver handed out. With `verify`, every byte is compared with the VRAM
// frames the pin held when it was made.
std::string program_runner::pin_dma(const step_spec& s, int pid, size_t index) {
  (void)pid;
  const pin_record* p = m_pins.at(s.pin);
  dma::dma_initiator* engine = s.peer.empty() ? m_engine : m_sys.find_initiator(s.peer);
  m_dmas[index].done = true;  // until it starts: the program's end waits for unfinished DMAs
  if (!p->table || s.offset >= p->length || (s.has_size && s.size > p->length - s.offset))
    return "-EINVAL";  // no pages (get_pages failed), or outside them: as kmd::dma_segments
  const uint64_t length = s.has_size ? s.size : p->length - s.offset;
  if (length > engine->local_memory().capacity()) {
    m_check = fmt::format("{} bytes do not fit the device's local memory", length);
    return "-EINVAL";
  }
  auto m = p->mappings.find(peer_name(s.peer));
  const std::vector<uint64_t>& pages = m != p->mappings.end() ? m->second.bus : p->bus;
  const uint64_t last_page = (s.offset + length - 1) / nv::gpu_page_bytes;
  if (last_page >= pages.size() || last_page >= p->frames.size())
    return "-EINVAL";  // the table had fewer pages than the range: nothing to program
  dma::dma_job job;
  job.write = s.write;
  for (uint64_t a = s.offset, local = 0; a < s.offset + length;) {
    const uint64_t n =
        std::min(s.offset + length, (a / nv::gpu_page_bytes + 1) * nv::gpu_page_bytes) - a;
    const uint64_t bus = pages[a / nv::gpu_page_bytes] + a % nv::gpu_page_bytes;
    if (!job.segments.empty() &&
        job.segments.back().bus_address + job.segments.back().length == bus)
      job.segments.back().length += n;
    else
      job.segments.push_back({bus, n, local});
    a += n, local += n;
  }
  // The source holds a fresh pattern; a read's destination starts as its complement.
  const std::vector<uint8_t> pattern = pattern_bytes(m_seed * 7919 + index * 131, length);
  std::vector<uint8_t> before(length);
  for (uint64_t i = 0; i < length; ++i) before[i] = uint8_t(~pattern[i]);
  engine->local_memory().write(0, s.write ? pattern : before);
  transport::stream_log& log = m_sys.streams();
  m_dmas[index].done = false;
  job.stream = log.open(length);
  log[job.stream].submit_ps = transport::now_ps();
  const uint32_t id = job.stream;
  engine->submit(std::move(job));
  transport::wait_until_landed(log, id);
  dma_result& d = m_dmas[index];
  d.add(log[id], length);  // its one repetition
  if (s.verify && log[id].undelivered_bytes() == 0) {
    // The pinned frames must now hold what the device sent (write), or the device what the
    // frames hold (read): the bytes went through the pin and nowhere else.
    std::vector<uint8_t> device(length);
    engine->local_memory().read(0, device);
    for (uint64_t a = s.offset; a < s.offset + length;) {
      const uint64_t n =
          std::min(s.offset + length, (a / nv::gpu_page_bytes + 1) * nv::gpu_page_bytes) - a;
      const vram_piece& f = p->frames[a / nv::gpu_page_bytes];
      std::vector<uint8_t> vram(n);
      if (f.length) f.store->read(f.vram + a % nv::gpu_page_bytes, vram);
      for (uint64_t k = 0; k < n; ++k)
        d.mismatched += !f.length || vram[k] != device[a - s.offset + k] ||
                        (s.write && device[a - s.offset + k] != pattern[a - s.offset + k]);
      a += n;
    }
  }
  d.done = true;
  m_dma_done.notify(SC_ZERO_TIME);
  note_dma_errors(d);
  return "ok";
}

}  // namespace p2psim::core
