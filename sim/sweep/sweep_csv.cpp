#include "sim/sweep/sweep_csv.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace p2psim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());  // shortest exact form
  return v.dump();
}

std::string str(const json& j, const char* key) {
  return j.contains(key) ? text_of(j[key]) : "";
}

}  // namespace

std::string to_csv(const plan& p, const std::vector<run_record>& runs) {
  std::ostringstream out;
  out << "run";
  for (const auto& a : p.axes) out << "," << csv_field(a.key);
  out << ",topology,transfer,src,dst,op,metric,value\n";
  for (size_t i = 0; i < p.runs(); ++i) {
    auto row = [&](const std::string& topology, const std::string& transfer, const std::string& src,
                   const std::string& dst, const std::string& op, const std::string& metric,
                   const std::string& value) {
      out << i;
      for (const auto& v : p.points[i]) out << "," << csv_field(v);
      for (const auto* f : {&topology, &transfer, &src, &dst, &op, &metric, &value})
        out << "," << csv_field(*f);
      out << "\n";
    };
    const run_record& r = runs.at(i);
    if (r.result) {
      const json& j = *r.result;
      for (const auto& b : j.value("bandwidth", json::array()))
        row(str(b, "topology"), str(b, "transfer"), str(b, "src"), str(b, "dst"), str(b, "op"),
            "gbps", str(b, "gbps"));
      for (const auto& l : j.value("latency", json::array()))
        row(str(l, "topology"), "", str(l, "src"), str(l, "dst"), str(l, "op"), "latency_ns",
            str(l, "ns"));
      for (const auto& t : j.value("runs", json::array())) {
        const json& sim = t.value("sim", json::object());
        row(str(t, "topology"), "", "", "", "", "simulated_ns", str(sim, "simulated_ns"));
        row(str(t, "topology"), "", "", "", "", "tlps", str(sim, "tlps"));
      }
    }
    row("", "", "", "", "", "exit_code", r.exit_code ? std::to_string(*r.exit_code) : "missing");
  }
  return out.str();
}

void write_plan(const std::string& dir, const plan& p) {
  fs::create_directories(fs::path(dir) / "results");
  std::ofstream f(fs::path(dir) / "sweep.json");
  if (!f) throw std::runtime_error("cannot write " + (fs::path(dir) / "sweep.json").string());
  f << to_json(p).dump(2) << "\n";
}

plan read_plan(const std::string& dir) {
  std::ifstream f(fs::path(dir) / "sweep.json");
  if (!f) throw std::runtime_error(dir + " holds no sweep.json (not a sweep directory)");
  try {
    return plan_from_json(json::parse(f));
  } catch (const json::exception& e) {
    throw std::runtime_error((fs::path(dir) / "sweep.json").string() + ": " + e.what());
  }
}

std::string result_json_path(const std::string& dir, size_t run) {
  return (fs::path(dir) / "results" / (run_stem(run) + ".json")).string();
}

std::string exit_code_path(const std::string& dir, size_t run) {
  return (fs::path(dir) / "results" / (run_stem(run) + ".exit")).string();
}

std::vector<run_record> read_results(const std::string& dir, const plan& p) {
  std::vector<run_record> out(p.runs());
  for (size_t i = 0; i < p.runs(); ++i) {
    if (std::ifstream e(exit_code_path(dir, i)); e) {
      int code = 0;
      if (e >> code) out[i].exit_code = code;
    }
    if (std::ifstream f(result_json_path(dir, i)); f) {
      try {
        out[i].result = json::parse(f);
      } catch (const json::exception&) {
        // A run that died while writing: its exit code (or its absence) tells the story.
      }
    }
  }
  return out;
}

}  // namespace p2psim::sweep
