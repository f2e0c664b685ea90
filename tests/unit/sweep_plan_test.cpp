// Sweep plans (the cartesian product of --vary values), the long-form CSV and the plot's
// selection of rows: plain logic, no runs.
#include <catch2/catch.hpp>

#include "sim/config/error.h"
#include "sim/sweep/csv_plot.h"
#include "sim/sweep/sweep_csv.h"
#include "sim/sweep/sweep_plan.h"

using namespace p2psim::sweep;

TEST_CASE("sweep: --vary key=v1,v2 gives the key and its values in order", "[sweep]") {
  axis a = parse_axis("link.gpu0.gen=3,1,2");
  CHECK(a.key == "link.gpu0.gen");
  CHECK(a.values == std::vector<std::string>{"3", "1", "2"});
  CHECK(parse_axis("pcie.mps=256B").values.size() == 1);
  for (const char* bad : {"gen", "=1,2", "gen=", "gen=1,,2", "gen=1,1"})
    CHECK_THROWS_AS(parse_axis(bad), p2psim::config::error);
}

TEST_CASE("sweep: a list or map value of --vary is one value with its commas", "[sweep]") {
  axis a = parse_axis("matrix.devices=[gpu0, gpu1],[gpu0, nic0], [nic0]");
  CHECK(a.key == "matrix.devices");
  CHECK(a.values == std::vector<std::string>{"[gpu0, gpu1]", "[gpu0, nic0]", "[nic0]"});
  CHECK(parse_axis("x={a: 1, b: 2},{a: 3}").values ==
        std::vector<std::string>{"{a: 1, b: 2}", "{a: 3}"});
  for (const char* bad : {"x=[a, b", "x=a],[b", "x=[a],[a]", "x=[a],"})
    CHECK_THROWS_AS(parse_axis(bad), p2psim::config::error);
}

TEST_CASE("sweep: the plan is the cartesian product and the last axis varies fastest", "[sweep]") {
  plan p = make_plan("/s.yaml", {"a=1"}, {parse_axis("x=1,2"), parse_axis("y=a,b,c")});
  REQUIRE(p.runs() == 6);
  CHECK(p.points[0] == std::vector<std::string>{"1", "a"});
  CHECK(p.points[1] == std::vector<std::string>{"1", "b"});
  CHECK(p.points[3] == std::vector<std::string>{"2", "a"});
  CHECK(p.run_arguments(4, "/r.json") == std::vector<std::string>{"/s.yaml", "--set", "a=1",
                                                                  "--set", "x=2", "--set", "y=b",
                                                                  "--json", "/r.json"});
  CHECK_THROWS_AS(make_plan("/s.yaml", {}, {parse_axis("x=1"), parse_axis("x=2")}),
                  p2psim::config::error);
  CHECK_THROWS_AS(make_plan("/s.yaml", {}, {parse_axis("x=1,2,3"), parse_axis("y=1,2,3")}, 8),
                  p2psim::config::error);
}

TEST_CASE("sweep: a plan survives its JSON form", "[sweep]") {
  plan p = make_plan("/s.yaml", {"k=v"}, {parse_axis("x=1,2"), parse_axis("y=a,b")});
  plan q = plan_from_json(to_json(p));
  CHECK(q.points == p.points);
  CHECK(q.sets == p.sets);
  CHECK(q.scenario == p.scenario);
  CHECK_THROWS(plan_from_json(nlohmann::json{{"scenario", "/s.yaml"}}));
}

TEST_CASE("sweep: CSV rows per metric with the varied keys as columns", "[sweep]") {
  plan p = make_plan("/s.yaml", {}, {parse_axis("x=1,2")});
  nlohmann::json run = {
      {"bandwidth",
       {{{"topology", "t"},
         {"transfer", "w"},
         {"src", "nic0"},
         {"dst", "gpu0"},
         {"op", "write"},
         {"gbps", 12.5}}}},
      {"latency",
       {{{"topology", "t"}, {"src", "nic0"}, {"dst", "gpu0"}, {"op", "read"}, {"ns", 800}}}},
      {"runs", {{{"topology", "t"}, {"sim", {{"simulated_ns", 1000}, {"tlps", 7}}}}}}};
  std::string csv = to_csv(p, {{0, run}, {2, std::nullopt}});
  CHECK(csv ==
        "run,x,topology,transfer,src,dst,op,metric,value\n"
        "0,1,t,w,nic0,gpu0,write,gbps,12.5\n"
        "0,1,t,,nic0,gpu0,read,latency_ns,800\n"
        "0,1,t,,,,,simulated_ns,1000\n"
        "0,1,t,,,,,tlps,7\n"
        "0,1,,,,,,exit_code,0\n"
        "1,2,,,,,,exit_code,2\n");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
}

TEST_CASE("plot: CSV fields may be quoted and rows pick one point per line", "[sweep][plot]") {
  csv_table t = parse_csv(
      "run,gen,metric,value,transfer\n"
      "0,1,gbps,2.0,\"w,1\"\n0,1,gbps,2.5,r\n1,2,gbps,4.0,\"w,1\"\n1,2,gbps,5.0,r\n",
      "t.csv");
  REQUIRE(t.rows.size() == 4);
  CHECK(t.rows[0][4] == "w,1");
  plot_request r;
  r.x = "gen";
  r.metric = "gbps";
  CHECK_THROWS_WITH(select_series(t, r), Catch::Contains("--where"));
  r.by = "transfer";
  auto lines = select_series(t, r);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].name == "transfer=w,1");
  CHECK(lines[0].points == std::vector<std::pair<std::string, double>>{{"1", 2.0}, {"2", 4.0}});
  r.by.clear();
  r.where = {{"transfer", "r"}};
  CHECK(select_series(t, r).front().points.back().second == 5.0);
  r.x = "nope";
  CHECK_THROWS_WITH(select_series(t, r), Catch::Contains("'nope' is not a column"));
  CHECK_THROWS(parse_csv("a,b\n1\n", "bad.csv"));
  CHECK_THROWS(parse_csv("a,b\n\"1,2\n", "bad.csv"));
}

TEST_CASE("plot: category x values keep their order and label the axis", "[sweep][plot]") {
  plot_request r;
  r.x = "mps";
  r.metric = "gbps";
  std::string s = gnuplot_script({{"gbps", {{"128B", 1}, {"256B", 2}}}}, r, "/o.svg");
  CHECK(s.find("0 1 \"128B\"") != std::string::npos);
  CHECK(s.find("1 2 \"256B\"") != std::string::npos);
  CHECK(s.find("xtic(3)") != std::string::npos);
  CHECK(s.find("set output '/o.svg'") != std::string::npos);
}
