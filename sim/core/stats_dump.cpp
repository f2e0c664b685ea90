#include "sim/core/stats_dump.h"

namespace p2psim::core {

using nlohmann::json;

namespace {

json channel(const link::channel_stats& s, uint64_t simulated_ns) {
  double sim_ps = double(simulated_ns) * 1000.0;
  return {{"tlps", s.tlps},
          {"payload_bytes", s.payload_bytes},
          {"wire_bytes", s.wire_bytes},
          {"dllps", s.dllps},
          {"busy_ps", s.busy_ps},
          {"utilization_ratio", sim_ps > 0 ? s.busy_ps / sim_ps : 0.0},
          {"credit_stalls", s.credit_stalls},
          {"max_queue_tlps", s.max_queue},
          {"relaxed_ordering_tlps", s.relaxed_ordering_tlps},
          {"dropped_tlps", s.dropped_tlps},
          {"dropped_bytes", s.dropped_bytes}};
}

json iommu_domain_stats(const iommu::iommu_domain& d) {
  const auto& s = d.stats();
  return {{"mode", iommu::to_string(d.mode())},
          {"translations", s.translations},
          {"iotlb_hits", s.iotlb_hits},
          {"iotlb_misses", s.iotlb_misses},
          {"iotlb_evictions", s.iotlb_evictions},
          {"faults", s.faults},
          {"mapped_pages", s.mapped_pages},
          {"maps", s.maps},
          {"unmaps", s.unmaps}};
}

}  // namespace

json dump_stats(fabric_system& sys, uint64_t ns) {
  json j;
  for (const auto& [name, l] : sys.links()) {
    const auto& p = l->params();
    j["links"][name] = {{"gen", p.gen},
                        {"width", p.width},
                        {"raw_gbps", l->raw_gbs()},
                        {"ack_limit_bytes", p.ack_limit},
                        {"fc_limit_bytes", p.fc_limit},
                        {"downstream", channel(l->downstream().stats(), ns)},
                        {"upstream", channel(l->upstream().stats(), ns)}};
  }
  for (const auto& [name, q] : sys.interconnects())
    j["interconnects"][name] = {{"bandwidth_gbps", q->params().bandwidth_gbs},
                                {"a_to_b", channel(q->a_to_b().stats(), ns)},
                                {"b_to_a", channel(q->b_to_a().stats(), ns)}};
  for (const auto& [name, sw] : sys.switches()) {
    const auto& s = sw->stats();
    j["switches"][name] = {{"forwarded_tlps", s.forwarded},
                           {"acs_redirected_tlps", s.redirected},
                           {"unsupported_requests", s.unsupported},
                           {"unexpected_completions", s.unexpected_completions}};
    for (size_t i = 0; i < s.ingress.size(); ++i) {
      std::string port = i == 0 ? "up" : "down" + std::to_string(i - 1);
      const auto& m = s.ingress[i].max;
      j["switches"][name]["ingress_max_tlps"][port] = {
          {"posted", m[0]}, {"non_posted", m[1]}, {"completion", m[2]}};
    }
  }
  for (const auto& sock : sys.topology().sockets) {
    const auto* rc = sys.find_socket(sock.name);
    const auto& s = rc->stats();
    j["root_complexes"][sock.name] = {{"iommu_mode", iommu::to_string(sock.iommu.mode)},
                                      {"iommu_faults", s.iommu_faults},
                                      {"iommu_walk_wait_ps", rc->iommu().walk_wait_ps()},
                                      {"memory_writes", s.memory_writes},
                                      {"memory_reads", s.memory_reads},
                                      {"p2p_requests", s.p2p_requests},
                                      {"cross_socket_p2p_requests", s.remote_p2p_requests},
                                      {"cross_socket_requests", s.remote_requests},
                                      {"unsupported_requests", s.unsupported},
                                      {"unexpected_completions", s.unexpected_completions}};
  }
  for (const auto& d : sys.topology().devices) {
    const dma::requester_stats* rs = nullptr;
    json dj;
    if (auto* g = sys.find_gpu(d.name)) {
      const auto& s = g->stats();
      dj = {{"bar1_writes", s.bar1_writes},
            {"bar1_reads", s.bar1_reads},
            {"bar1_unmapped_accesses", s.bar1_unmapped},
            {"bar0_accesses", s.bar0_accesses},
            {"unsupported_requests", s.unsupported},
            {"vram_allocated_bytes", g->vram().allocated_bytes()}};
      rs = &g->copy_engine().stats();
    } else if (auto* e = sys.find_engine(d.name)) {
      const auto& s = e->stats();
      dj = {{"jobs", s.jobs},
            {"bar2_writes", s.bar2_writes},
            {"bar2_reads", s.bar2_reads},
            {"bar0_accesses", s.bar0_accesses},
            {"unsupported_requests", s.unsupported}};
      rs = &e->requester().stats();
    }
    if (const auto* dom = sys.iommu_for(d.name)) dj["iommu"] = iommu_domain_stats(*dom);
    if (rs)
      dj["requester"] = {{"write_tlps", rs->writes},
                         {"read_requests", rs->reads},
                         {"completions", rs->completions},
                         {"error_completions", rs->error_completions},
                         {"tag_stalls", rs->tag_stalls},
                         {"max_tags_in_use", rs->max_tags_in_use},
                         {"completion_timeouts", rs->completion_timeouts},
                         {"unexpected_completions", rs->unexpected_completions}};
    j["devices"][d.name] = dj;
  }
  return j;
}

}  // namespace p2psim::core
