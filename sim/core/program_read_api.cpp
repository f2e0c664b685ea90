// Reads the program steps that reach the driver API directly: the nv-p2p calls with named
// pins, the pointer attribute calls with expected and stored values, dma through a pin, and
// the `callbacks` check (docs/formats-scenario.md, "Driver regressions"). Every name a step
// uses must come from an earlier step, so a typo is refused at its line, never run.
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>

#include "models/driver/cuda/cu_result_names.h"
#include "models/driver/cuda/cuda.h"
#include "sim/config/units.h"
#include "sim/core/program_read.h"

namespace p2psim::core::detail {

namespace {

const std::map<std::string, int>& attribute_names() {
  static const std::map<std::string, int> names = {
      {"CONTEXT", CU_POINTER_ATTRIBUTE_CONTEXT},
      {"MEMORY_TYPE", CU_POINTER_ATTRIBUTE_MEMORY_TYPE},
      {"DEVICE_POINTER", CU_POINTER_ATTRIBUTE_DEVICE_POINTER},
      {"HOST_POINTER", CU_POINTER_ATTRIBUTE_HOST_POINTER},
      {"P2P_TOKENS", CU_POINTER_ATTRIBUTE_P2P_TOKENS},
      {"SYNC_MEMOPS", CU_POINTER_ATTRIBUTE_SYNC_MEMOPS},
      {"BUFFER_ID", CU_POINTER_ATTRIBUTE_BUFFER_ID},
      {"IS_MANAGED", CU_POINTER_ATTRIBUTE_IS_MANAGED},
      {"DEVICE_ORDINAL", CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL},
      {"IS_LEGACY_CUDA_IPC_CAPABLE", CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE},
      {"RANGE_START_ADDR", CU_POINTER_ATTRIBUTE_RANGE_START_ADDR},
      {"RANGE_SIZE", CU_POINTER_ATTRIBUTE_RANGE_SIZE},
      {"MAPPED", CU_POINTER_ATTRIBUTE_MAPPED},
      {"ALLOWED_HANDLE_TYPES", CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES},
      {"IS_GPU_DIRECT_RDMA_CAPABLE", CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE},
      {"ACCESS_FLAGS", CU_POINTER_ATTRIBUTE_ACCESS_FLAGS}};
  return names;
}

const std::map<std::string, uint64_t>& value_names() {
  static const std::map<std::string, uint64_t> names = {
      {"true", 1},
      {"false", 0},
      {"NULL", 0},
      {"CU_MEMORYTYPE_HOST", CU_MEMORYTYPE_HOST},
      {"CU_MEMORYTYPE_DEVICE", CU_MEMORYTYPE_DEVICE},
      {"CU_MEMORYTYPE_ARRAY", CU_MEMORYTYPE_ARRAY},
      {"CU_MEMORYTYPE_UNIFIED", CU_MEMORYTYPE_UNIFIED}};
  return names;
}

const char* const errno_names[] = {"-EINVAL", "-ENOMEM", "-EPERM",  "-EIO",  "-ENOTSUPP",
                                   "-EFAULT", "-EBADF",  "-EACCES", "-EBUSY"};

bool is_map(const config::node_reader& r, const std::string& key) {
  return r.has(key) && r.node()[key].IsMap();
}

// `key: NULL` (YAML reads NULL, null and ~ as its null): the API gets a NULL pointer.
bool take_null(const config::node_reader& r, const std::string& key) {
  if (!r.has(key) || !r.node()[key].IsNull()) return false;
  r.raw(key);  // consumed
  return true;
}

std::string join(const std::set<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

void need_buffer(const config::node_reader& r, const std::string& key, const std::string& name,
                 const program_names& names) {
  if (!names.buffers.count(name) && !names.host_buffers.count(name))
    r.fail(key, "no buffer '" + name +
                    "' was allocated by an earlier cuMemAlloc, malloc, cuMemHostAlloc or "
                    "cuMemAllocHost");
}

// `pin: NAME` of an earlier get_pages, or `pin: NULL` where NULL is allowed.
void read_pin_ref(const config::node_reader& r, step_spec& s, const program_names& names,
                  bool null_allowed) {
  if (null_allowed && take_null(r, "pin")) {
    s.null_pin = true;
    s.pin = "NULL";
    return;
  }
  s.pin = r.str("pin");
  if (!names.pins.count(s.pin))
    r.fail("pin", "no pin '" + s.pin +
                      "' was made by an earlier nvidia_p2p_get_pages or "
                      "nvidia_p2p_get_pages_persistent");
}

// `peer: ENGINE` (checked against the topology later), `peer: NULL`, or the peer_driver's.
void read_peer(const config::node_reader& r, step_spec& s, const program_names& names,
               bool null_allowed) {
  if (null_allowed && take_null(r, "peer")) {
    s.null_peer = true;
    return;
  }
  s.peer = r.str("peer", "");
  if (s.peer.empty() && !names.peer_driver)
    r.fail("peer", "no `peer` here and no `peer_driver` section to take the device from");
}

// Where a call points: `buffer` (+ `offset`) or a literal `address_key` (va: or ptr:), and
// `size` (required with a literal address; a buffer's default is the rest of the buffer).
void read_range(const config::node_reader& r, step_spec& s, const program_names& names,
                const char* address_key, bool with_size) {
  const bool has_buffer = r.has("buffer");
  s.has_va = r.has(address_key);
  if (has_buffer && s.has_va)
    r.fail(address_key, std::string("give `buffer` or `") + address_key + "`, not both");
  if (!has_buffer && !s.has_va)
    r.fail("buffer", std::string("needs `buffer` (a cuMemAlloc's name) or `") + address_key +
                         "` (an address)");
  if (has_buffer) {
    s.buffer = r.str("buffer");
    need_buffer(r, "buffer", s.buffer, names);
    s.offset = r.size("offset", 0);
  } else {
    s.va = r.address(address_key);
  }
  if (!with_size) return;
  s.has_size = r.has("size") || s.has_va;
  s.size = s.has_va ? r.size("size") : r.size("size", 0);
  if (s.has_va && s.va + s.size < s.va)
    r.fail("size", "va + size wraps past 2^64: the range does not exist");
}

// none | pin | a stored P2P_TOKENS name | {p2p_token: N, va_space_token: N}
void read_tokens(const config::node_reader& r, step_spec& s, const program_names& names,
                 bool pin_allowed) {
  s.tokens.what = pin_allowed ? tokens_spec::kind::of_the_pin : tokens_spec::kind::zero;
  if (!r.has("tokens")) return;
  if (is_map(r, "tokens")) {
    auto t = r.child("tokens");
    s.tokens.what = tokens_spec::kind::literal;
    s.tokens.p2p_token = t.address("p2p_token");
    s.tokens.va_space_token =
        uint32_t(t.integer("va_space_token", 0, std::numeric_limits<uint32_t>::max()));
    t.done();
    return;
  }
  const std::string name = r.str("tokens");
  if (name == "none") {
    s.tokens.what = tokens_spec::kind::zero;
  } else if (name == "pin" && pin_allowed) {
    s.tokens.what = tokens_spec::kind::of_the_pin;
  } else if (names.stored_tokens.count(name)) {
    s.tokens.what = tokens_spec::kind::named;
    s.tokens.name = name;
  } else {
    r.fail("tokens", "'" + name + "' is not " + (pin_allowed ? "`pin`, " : "") +
                         "`none`, {p2p_token: N, va_space_token: N} or a name under which an "
                         "earlier step stored P2P_TOKENS");
  }
}

int read_attribute_name(const config::node_reader& r, attribute_spec& a) {
  a.name = r.str("attribute");
  std::string n = a.name;
  const std::string prefix = "CU_POINTER_ATTRIBUTE_";
  if (n.rfind(prefix, 0) == 0) n = n.substr(prefix.size());
  auto it = attribute_names().find(n);
  if (it != attribute_names().end()) return it->second;
  try {  // a number: what the model makes of a value it does not know
    uint64_t v = config::parse_address(a.name);
    if (v <= uint64_t(std::numeric_limits<int>::max())) return int(v);
  } catch (const std::invalid_argument&) {
  }
  std::set<std::string> known;
  for (const auto& [name, id] : attribute_names()) known.insert(name);
  r.fail("attribute", "unknown pointer attribute '" + a.name + "' (one of: " + join(known) +
                          ", with or without CU_POINTER_ATTRIBUTE_, or a number)");
}

void read_value(const config::node_reader& r, attribute_spec& a, const program_names& names) {
  value_spec& v = a.value;
  const bool tokens = a.attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS;
  if (!r.has("value")) return;
  if (is_map(r, "value")) {
    auto c = r.child("value");
    if (c.has("buffer")) {
      v.what = value_spec::kind::buffer;
      v.ref = c.str("buffer");
      need_buffer(c, "buffer", v.ref, names);
      v.offset = c.size("offset", 0);
    } else if (c.has("same_as") || c.has("differs_from")) {
      const char* key = c.has("same_as") ? "same_as" : "differs_from";
      v.what = c.has("same_as") ? value_spec::kind::same_as : value_spec::kind::differs_from;
      v.ref = c.str(key);
      if (!names.stored.count(v.ref))
        c.fail(key, "no earlier attribute was stored under '" + v.ref + "'");
      if (tokens != bool(names.stored_tokens.count(v.ref)))
        c.fail(key, "'" + v.ref + "' holds " + (tokens ? "a value, not P2P_TOKENS" : "P2P_TOKENS"));
    } else {
      c.fail("expected `buffer` (with `offset`), `same_as` or `differs_from`");
    }
    c.done();
    if (tokens && v.what == value_spec::kind::buffer)
      r.fail("value", "P2P_TOKENS compares only with same_as or differs_from");
    return;
  }
  if (tokens) r.fail("value", "P2P_TOKENS compares only with same_as or differs_from");
  v.what = value_spec::kind::number;
  if (take_null(r, "value")) return;  // NULL: 0
  const std::string text = r.str("value");
  v.what = value_spec::kind::number;
  if (auto it = value_names().find(text); it != value_names().end()) {
    v.number = it->second;
    return;
  }
  try {  // "-2": DEVICE_ORDINAL's CU_DEVICE_INVALID, as the int it is
    v.number = text.rfind('-', 0) == 0 ? uint64_t(0) - config::parse_address(text.substr(1))
                                       : config::parse_address(text);
    return;
  } catch (const std::invalid_argument&) {
  }
  try {  // RANGE_SIZE: a size with its unit
    v.number = config::parse_size(text);
  } catch (const std::invalid_argument&) {
    r.fail("value",
           "expected a number, a size (1MiB), true, false, NULL, a CU_MEMORYTYPE_* name "
           "or a map with `buffer`, `same_as` or `differs_from`, got '" +
               text + "'");
  }
}

attribute_spec read_attribute(const config::node_reader& r, program_names& names) {
  attribute_spec a;
  a.attribute = read_attribute_name(r, a);
  read_value(r, a, names);
  a.store = r.str("store", "");
  return a;
}

void note_stored(const attribute_spec& a, program_names& names) {
  if (a.store.empty()) return;
  names.stored.insert(a.store);
  if (a.attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS)
    names.stored_tokens.insert(a.store);
  else
    names.stored_tokens.erase(a.store);  // stored again, as a value this time
}

void read_get_pages(const config::node_reader& r, step_spec& s, program_names& names,
                    bool persistent) {
  s.null_pin = take_null(r, "pin");
  s.pin = s.null_pin ? "NULL" : r.str("pin");
  read_range(r, s, names, "va", true);
  if (persistent) {
    s.flags = uint32_t(r.integer("flags", 0, std::numeric_limits<uint32_t>::max(), 0));
  } else {
    read_tokens(r, s, names, false);
    s.callback =
        take_null(r, "callback")  // `callback: NULL`: no function at all
            ? "null"
            : r.choice("callback", {"free_table", "count", "put_pages", "get_pages"}, "free_table");
    if (s.callback == "get_pages") {
      s.callback_buffer = r.str("callback_buffer", "");
      if (!s.callback_buffer.empty()) need_buffer(r, "callback_buffer", s.callback_buffer, names);
    }
  }
  if (!s.null_pin) names.pins.insert(s.pin);  // after the range: `pin` may be made again
}

void read_mapping(const config::node_reader& r, step_spec& s) {
  s.null_mapping = take_null(r, "mapping");
  if (!s.null_mapping) s.mapping = r.str("mapping", "");
}

}  // namespace

const std::set<std::string>& api_calls() {
  static const std::set<std::string> calls = {"nvidia_p2p_get_pages",
                                              "nvidia_p2p_put_pages",
                                              "nvidia_p2p_get_pages_persistent",
                                              "nvidia_p2p_put_pages_persistent",
                                              "nvidia_p2p_free_page_table",
                                              "nvidia_p2p_dma_map_pages",
                                              "nvidia_p2p_dma_unmap_pages",
                                              "nvidia_p2p_free_dma_mapping",
                                              "cuPointerGetAttribute",
                                              "cuPointerGetAttributes",
                                              "cuPointerSetAttribute",
                                              "callbacks"};
  return calls;
}

bool is_api_call(const std::string& call) {
  return api_calls().count(call) > 0;
}

void check_result_name(const config::node_reader& r, const std::string& key,
                       const std::string& value) {
  if (value == "ok") return;
  for (const char* e : errno_names)
    if (value == e) return;
  for (const auto& e : cuda::cu_result_names)  // what cuGetErrorName knows
    if (value == e.name && e.code != CUDA_SUCCESS) return;
  std::string known;
  for (const char* e : errno_names) known += std::string(", ") + e;
  r.fail(key, "unknown result '" + value + "' (ok" + known +
                  " or a CUDA_ERROR_* name such as CUDA_ERROR_INVALID_VALUE)");
}

void read_api_step(const config::node_reader& r, step_spec& s, program_names& names) {
  const std::string& c = s.call;
  if (c == "nvidia_p2p_get_pages" || c == "nvidia_p2p_get_pages_persistent") {
    read_get_pages(r, s, names, c == "nvidia_p2p_get_pages_persistent");
  } else if (c == "nvidia_p2p_put_pages" || c == "nvidia_p2p_put_pages_persistent") {
    read_pin_ref(r, s, names, true);
    s.has_va = r.has("va");
    s.va = r.has("va") ? r.address("va") : 0;  // default: the pinned address
    if (c == "nvidia_p2p_put_pages")
      read_tokens(r, s, names, true);
    else
      s.flags = uint32_t(r.integer("flags", 0, std::numeric_limits<uint32_t>::max(), 0));
  } else if (c == "nvidia_p2p_free_page_table") {
    read_pin_ref(r, s, names, true);
  } else if (c == "nvidia_p2p_dma_map_pages") {
    read_pin_ref(r, s, names, true);
    read_peer(r, s, names, true);
  } else if (c == "nvidia_p2p_dma_unmap_pages") {
    read_pin_ref(r, s, names, true);
    read_peer(r, s, names, true);
    read_mapping(r, s);
  } else if (c == "nvidia_p2p_free_dma_mapping") {
    read_mapping(r, s);
    if (!s.null_mapping) {  // the mapping a pin got for a peer
      read_pin_ref(r, s, names, false);
      read_peer(r, s, names, false);
      if (!s.mapping.empty()) r.fail("mapping", "only `mapping: NULL` here; name the pin and peer");
    }
  } else if (c == "cuPointerGetAttribute") {
    read_range(r, s, names, "ptr", false);
    s.attributes.push_back(read_attribute(r, names));
    note_stored(s.attributes.back(), names);
  } else if (c == "cuPointerGetAttributes") {
    read_range(r, s, names, "ptr", false);
    for (const auto& a : r.list("attributes")) {
      s.attributes.push_back(read_attribute(a, names));
      a.done();
    }
    for (const auto& a : s.attributes) note_stored(a, names);
  } else if (c == "cuPointerSetAttribute") {
    read_range(r, s, names, "ptr", false);
    attribute_spec a;  // SYNC_MEMOPS, the one attribute the API sets (7.2)
    a.name = "SYNC_MEMOPS";
    a.attribute = CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;
    if (r.has("attribute")) a.attribute = read_attribute_name(r, a);
    s.attributes.push_back(a);
    s.set_value = uint32_t(r.integer("value", 0, std::numeric_limits<uint32_t>::max(), 1));
  } else if (c == "callbacks") {
    read_pin_ref(r, s, names, false);
    s.count = int(r.integer("count", 0, 1'000'000'000));
    s.returned = r.str("returned", "");
    if (!s.returned.empty()) check_result_name(r, "returned", s.returned);
  }
}

void read_pin_dma(const config::node_reader& r, step_spec& s, program_names& names) {
  read_pin_ref(r, s, names, false);
  s.offset = r.size("offset", 0);
  s.has_size = r.has("size");
  s.size = r.size("size", 0);
  if (s.has_size && s.size == 0) r.fail("size", "a dma moves at least one byte");
  if (s.offset + s.size < s.offset) r.fail("size", "offset + size wraps past 2^64");
  s.write = r.choice("op", {"write", "read"}) == "write";
  read_peer(r, s, names, false);
  s.verify = r.boolean("verify", true);
  s.name = r.str("name", "");
  if (!s.name.empty()) names.transfers.insert(s.name);
}

}  // namespace p2psim::core::detail
