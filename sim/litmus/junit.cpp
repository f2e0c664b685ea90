#include "sim/litmus/junit.h"

#include <sstream>

#include <fmt/format.h>

#include <pugixml.hpp>
#include <stdexcept>

namespace p2psim::litmus {

std::string junit_xml(const std::string& suite, const std::vector<junit_case>& cases) {
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  auto suites = doc.append_child("testsuites");
  auto s = suites.append_child("testsuite");
  size_t failures = 0;
  double time = 0;
  for (const auto& c : cases) {
    failures += !c.failure.empty();
    time += c.result.wall_seconds;
  }
  s.append_attribute("name") = suite.c_str();
  s.append_attribute("tests") = uint64_t(cases.size());
  s.append_attribute("failures") = uint64_t(failures);
  s.append_attribute("errors") = 0;
  s.append_attribute("time") = fmt::format("{:.3f}", time).c_str();
  suites.append_attribute("tests") = uint64_t(cases.size());
  suites.append_attribute("failures") = uint64_t(failures);
  for (const auto& c : cases) {
    auto tc = s.append_child("testcase");
    tc.append_attribute("classname") = "litmus";
    tc.append_attribute("name") = c.name.c_str();
    tc.append_attribute("file") = c.file.c_str();
    tc.append_attribute("time") = fmt::format("{:.3f}", c.result.wall_seconds).c_str();
    // How far the runs went through the test's tree of orders, for dashboards to follow.
    auto props = tc.append_child("properties");
    auto prop = [&](const char* name, const std::string& value) {
      auto p = props.append_child("property");
      p.append_attribute("name") = name;
      p.append_attribute("value") = value.c_str();
    };
    prop("runs", std::to_string(c.result.runs));
    prop("every_order", c.result.exhaustive ? "true" : "false");
    prop("orders_seen", std::to_string(c.result.distinct));
    prop("orders_estimated", fmt::format("{:.0f}", c.result.tree_estimate));
    prop("explored_share", fmt::format("{:.6g}", c.result.explored_share));
    if (!c.failure.empty()) {
      auto f = tc.append_child("failure");
      f.append_attribute("message") = c.failure.c_str();
      f.append_attribute("type") = "expectation";
      f.append_child(pugi::node_pcdata).set_value(c.report.c_str());
    }
    tc.append_child("system-out").append_child(pugi::node_pcdata).set_value(c.report.c_str());
  }
  std::ostringstream out;
  doc.save(out, "  ");
  return out.str();
}

}  // namespace p2psim::litmus
