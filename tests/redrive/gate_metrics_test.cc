// The gates' metrics file (redrive/stats.h metrics_text): the held, parked and oldest-held gauges
// absent until known and then exact, the died-again counter; and the shipped alert rules
// (packaging/prometheus/replaygate-alerts.yml) naming only series the gates write. No server.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>

#include "redrive/stats.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

// Each sample line's series name and its label names ("# " lines skipped).
std::map<std::string, std::set<std::string>> series_of(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  static const std::regex label(R"re(([a-zA-Z_][a-zA-Z0-9_]*)=")re");
  for (const std::string& line : lines_of(text)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t end = line.find_first_of("{ ");
    std::set<std::string>& labels = out[line.substr(0, end)];
    if (end == std::string::npos || line[end] != '{') continue;
    const std::string inside = line.substr(end, line.find('}') - end);
    for (std::sregex_iterator i(inside.begin(), inside.end(), label), e; i != e; ++i) {
      labels.insert((*i)[1]);
    }
  }
  return out;
}

class GateMetrics : public CliFixture {
 protected:
  void SetUp() override {
    table_ = shipped_table();
    ASSERT_TRUE(table_);
    stats_.per_verb.assign(table_->verb_count(), 0);
  }
  std::string text() const { return redrive::metrics_text(stats_, *table_, "payments.dlq"); }

  std::unique_ptr<Table> table_;
  redrive::RunStats stats_;
};

TEST_F(GateMetrics, HeldParkedAndOldestAreAbsentUntilKnownThenExact) {
  std::string t = text();
  for (const char* name : {"replaygate_gate_held_letters", "replaygate_gate_parked_letters",
                           "replaygate_gate_oldest_held_seconds", "replaygate_gate_queue_depth"}) {
    EXPECT_EQ(t.find(name), std::string::npos) << "absent, not 0, while unknown: " << name;
  }
  EXPECT_NE(t.find("replaygate_gate_died_again_total{queue=\"payments.dlq\"} 0\n"),
            std::string::npos)
      << t;
  // Known zeros are written as 0: an empty hold place is a fact.
  stats_.held_letters = 0;
  stats_.parked_letters = 0;
  t = text();
  EXPECT_NE(t.find("\nreplaygate_gate_held_letters{queue=\"payments.dlq\"} 0\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("\nreplaygate_gate_parked_letters{queue=\"payments.dlq\"} 0\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("replaygate_gate_oldest_held_seconds"), std::string::npos)
      << "an empty hold place has no oldest letter";
  stats_.held_letters = 4000000000ULL;  // past uint32: the count is 64-bit
  stats_.parked_letters = 7;
  stats_.oldest_held_seconds = 93784.25;
  stats_.died_again = 3;
  t = text();
  EXPECT_NE(t.find("\nreplaygate_gate_held_letters{queue=\"payments.dlq\"} 4000000000\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("\nreplaygate_gate_parked_letters{queue=\"payments.dlq\"} 7\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("\nreplaygate_gate_oldest_held_seconds{queue=\"payments.dlq\"} 93784.250\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("\nreplaygate_gate_died_again_total{queue=\"payments.dlq\"} 3\n"),
            std::string::npos)
      << t;
  for (const char* type : {"# TYPE replaygate_gate_held_letters gauge\n",
                           "# TYPE replaygate_gate_parked_letters gauge\n",
                           "# TYPE replaygate_gate_oldest_held_seconds gauge\n",
                           "# TYPE replaygate_gate_died_again_total counter\n"}) {
    EXPECT_NE(t.find(type), std::string::npos) << type;
  }
  // Unknown again (a failed read): absent again, never the last value.
  stats_.held_letters.reset();
  stats_.oldest_held_seconds.reset();
  t = text();
  EXPECT_EQ(t.find("replaygate_gate_held_letters"), std::string::npos) << t;
  EXPECT_EQ(t.find("replaygate_gate_oldest_held_seconds"), std::string::npos) << t;
}

// The names and functions PromQL gives the rules file (all it may use besides series names).
const std::set<std::string>& promql_words() {
  static const std::set<std::string> words = {
      "and",      "or",         "unless",      "offset", "by",    "without",       "on",
      "ignoring", "group_left", "group_right", "bool",   "time",  "min_over_time", "max_over_time",
      "delta",    "deriv",      "increase",    "rate",   "count", "sum",           "min",
      "max",      "absent",     "changes"};
  return words;
}

TEST_F(GateMetrics, TheShippedAlertRulesNameOnlySeriesTheGatesWrite) {
  // Every series a gate can write: every optional one set.
  stats_.queue_depth = 1;
  stats_.held_letters = 1;
  stats_.parked_letters = 1;
  stats_.oldest_held_seconds = 1;
  std::map<std::string, std::set<std::string>> written = series_of(text());
  ASSERT_EQ(written.count("replaygate_gate_held_letters"), 1u);
  // node_exporter's textfile collector: the metrics file's modification time, by file.
  written["node_textfile_mtime_seconds"] = {"file"};

  const std::string path = kSourceDir + "/packaging/prometheus/replaygate-alerts.yml";
  YAML::Node root;
  ASSERT_NO_THROW(root = YAML::LoadFile(path)) << path;
  ASSERT_TRUE(root["groups"].IsSequence());
  // A token of an expression: a string, a label matcher or range, a number (with a duration's
  // unit), a name, or one other character.
  static const std::regex token(
      R"re("(?:[^"\\]|\\.)*"|\{[^}]*\}|\[[^\]]*\]|[0-9][0-9.]*[a-z]*|[A-Za-z_:][A-Za-z0-9_:]*|[\s\S])re");
  static const std::regex name(R"re([A-Za-z_:][A-Za-z0-9_:]*)re");
  static const std::regex duration(R"re([0-9]+[smhdwy])re");
  static const std::regex template_label(R"re(\$labels\.([A-Za-z_][A-Za-z0-9_]*))re");
  std::set<std::string> alerts, used;
  for (const YAML::Node& group : root["groups"]) {
    ASSERT_TRUE(group["name"].IsScalar());
    for (const YAML::Node& rule : group["rules"]) {
      const std::string alert = rule["alert"].as<std::string>("");
      ASSERT_FALSE(alert.empty()) << "every rule is an alert with a name";
      EXPECT_TRUE(alerts.insert(alert).second) << "two alerts named " << alert;
      const std::string expr = rule["expr"].as<std::string>("");
      ASSERT_FALSE(expr.empty()) << alert;
      if (rule["for"]) {
        EXPECT_TRUE(std::regex_match(rule["for"].as<std::string>(), duration)) << alert;
      }
      const std::string severity = rule["labels"]["severity"].as<std::string>("");
      EXPECT_TRUE(severity == "page" || severity == "warning") << alert << ": " << severity;
      // The series the expression reads, and the labels they carry.
      std::set<std::string> labels;
      for (std::sregex_iterator i(expr.begin(), expr.end(), token), e; i != e; ++i) {
        const std::string t = i->str();
        if (!std::regex_match(t, name) || promql_words().count(t) > 0) continue;
        const auto found = written.find(t);
        ASSERT_NE(found, written.end()) << alert << " reads " << t << ", which no gate writes";
        used.insert(t);
        labels.insert(found->second.begin(), found->second.end());
      }
      for (const char* field : {"summary", "description"}) {
        const std::string text = rule["annotations"][field].as<std::string>("");
        EXPECT_FALSE(text.empty()) << alert << " has no " << field;
        for (std::sregex_iterator i(text.begin(), text.end(), template_label), e; i != e; ++i) {
          EXPECT_EQ(labels.count((*i)[1]), 1u) << alert << "'s " << field << " names label "
                                               << (*i)[1] << ", which its series do not carry";
        }
      }
    }
  }
  // The issue's asks: held letters older than N, a growing pile, a replay that died again, a
  // gate that stopped writing.
  for (const char* series : {"replaygate_gate_oldest_held_seconds", "replaygate_gate_held_letters",
                             "replaygate_gate_died_again_total", "node_textfile_mtime_seconds"}) {
    EXPECT_EQ(used.count(series), 1u) << "no rule reads " << series;
  }
}

}  // namespace
}  // namespace replaygate::testing
