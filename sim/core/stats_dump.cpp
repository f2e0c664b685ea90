#include "sim/core/stats_dump.h"

namespace p2psim::core {

using nlohmann::json;

namespace {

// Every declared stat of `s` under its key (models/stats/stat.h).
template <class Stats>
json declared(const stats::table<Stats>& t, const Stats& s, uint64_t simulated_ps) {
  json j = json::object();
  for (const auto& st : t)
    if (st.count)
      j[st.key] = st.count(s);
    else
      j[st.key] = st.ratio(s, simulated_ps);
  return j;
}

}  // namespace

json dump_stats(fabric_system& sys, uint64_t ns) {
  const uint64_t ps = ns * 1000;
  const auto& channel = link::channel_stat_table();
  json j;
  for (const auto& [name, l] : sys.links()) {
    const auto& p = l->params();
    auto direction = [&](const link::link_channel& c) {
      json d = declared(channel, c.stats(), ps);
      d["ack_limit_bytes"] = c.timing().ack_limit;  // of the DLLPs charged to it
      d["fc_limit_bytes"] = c.timing().fc_limit;
      return d;
    };
    j["links"][name] = {{"gen", p.gen},
                        {"width", p.width},
                        {"raw_gbps", l->raw_gbs()},
                        {"downstream", direction(l->downstream())},
                        {"upstream", direction(l->upstream())}};
  }
  for (const auto& [name, q] : sys.interconnects())
    j["interconnects"][name] = {{"bandwidth_gbps", q->params().bandwidth_gbs},
                                {"a_to_b", declared(channel, q->a_to_b().stats(), ps)},
                                {"b_to_a", declared(channel, q->b_to_a().stats(), ps)}};
  for (const auto& [name, sw] : sys.switches()) {
    const auto& s = sw->stats();
    j["switches"][name] = declared(pcie_switch::switch_stat_table(), s, ps);
    for (size_t i = 0; i < s.ingress.size(); ++i) {
      std::string port = i == 0 ? "up" : "down" + std::to_string(i - 1);
      const auto& m = s.ingress[i].max;
      j["switches"][name]["ingress_max_tlps"][port] = {
          {"posted", m[0]}, {"non_posted", m[1]}, {"completion", m[2]}};
    }
  }
  for (const auto& sock : sys.topology().sockets) {
    const auto* rc = sys.find_socket(sock.name);
    json r = declared(root_complex::rc_stat_table(), rc->stats(), ps);
    r["iommu_mode"] = iommu::to_string(sock.iommu.mode);
    r["iommu_walk_wait_ps"] = rc->iommu().walk_wait_ps();
    j["root_complexes"][sock.name] = r;
  }
  for (const auto& d : sys.topology().devices) {
    auto* model = sys.find_device(d.name);
    json dj = json::object();
    for (const auto& r : model->stats(ps))
      if (r.is_ratio)
        dj[r.decl->key] = r.ratio;
      else
        dj[r.decl->key] = r.count;
    const dma::requester_stats* rs = nullptr;
    if (auto* init = model->initiator()) rs = &init->requester().stats();
    if (const auto* dom = sys.iommu_for(d.name)) {
      dj["iommu"] = declared(iommu::iommu_stat_table(), dom->stats(), ps);
      dj["iommu"]["mode"] = iommu::to_string(dom->mode());
    }
    if (rs) dj["requester"] = declared(dma::requester_stat_table(), *rs, ps);
    j["devices"][d.name] = dj;
  }
  return j;
}

}  // namespace p2psim::core
