// `replaygate diff`: golden outputs for the fixtures in tests/data/diff/ (unchanged, safer, more
// dangerous, renamed-only) in text, JSON and Markdown, and one test per exit code; the same
// fixtures compiled to frozen tables at test time (table vs table, policy vs table), and tables
// that do not load.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "runtime/table.h"
#include "tests/compiler/analysis_builder.h"

namespace {

namespace fs = std::filesystem;

const std::string kSource = RG_SOURCE_DIR;
const std::string kBinary = RG_BINARY;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `replaygate diff ARGS` in `dir` (the source directory unless given), so paths in the
// output are relative.
Result diff(const std::string& args, const std::string& dir = kSource) {
  const fs::path out = fs::temp_directory_path() / ("rg_diff_test_" + std::to_string(::getpid()));
  const std::string command = "cd '" + dir + "' && '" + kBinary + "' diff " + args + " >'" +
                              out.string() + ".out' 2>'" + out.string() + ".err'";
  const int status = std::system(command.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out.string() + ".out");
  r.err = read_file(out.string() + ".err");
  fs::remove(out.string() + ".out");
  fs::remove(out.string() + ".err");
  return r;
}

void expect_golden(const std::string& actual, const std::string& golden) {
  const fs::path path = kSource + "/tests/data/diff/" + golden;
  if (std::getenv("RG_UPDATE_GOLDEN") != nullptr) std::ofstream(path, std::ios::binary) << actual;
  EXPECT_EQ(actual, read_file(path)) << "golden " << golden << ", actual:\n" << actual;
}

Result diff_fixture(const std::string& name, const std::string& format) {
  return diff("tests/data/diff/base.yaml tests/data/diff/" + name + ".yaml --format " + format);
}

TEST(DiffCommand, UnchangedExitsZero) {
  const Result r = diff_fixture("unchanged", "text");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "unchanged.text.expected");
}

TEST(DiffCommand, SaferChangeExitsOne) {
  for (const char* format : {"text", "json", "markdown"}) {
    const Result r = diff_fixture("safer", format);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    expect_golden(r.out, std::string("safer.") + format + ".expected");
  }
}

TEST(DiffCommand, MoreDangerousChangeExitsThree) {
  for (const char* format : {"text", "json", "markdown"}) {
    const Result r = diff_fixture("more_dangerous", format);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    expect_golden(r.out, std::string("more_dangerous.") + format + ".expected");
  }
}

TEST(DiffCommand, RenamedRuleIsAProvenanceChangeOnly) {
  const Result r = diff_fixture("renamed", "text");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "renamed.text.expected");
  const Result j = diff_fixture("renamed", "json");
  EXPECT_NE(j.out.find("\"verb_change_regions\": 0, \"provenance_change_regions\": 1"),
            std::string::npos)
      << j.out;
}

TEST(DiffCommand, FieldChangesAreReported) {
  const Result r = diff_fixture("fields", "text");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "fields.text.expected");
}

TEST(DiffCommand, ErrorsExitTwo) {
  Result r = diff("tests/data/diff/base.yaml tests/data/diff/missing.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read"), std::string::npos) << r.err;
  r = diff("tests/data/diff/base.yaml tests/data/diff/safer.yaml --format html");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format must be text, json or markdown"), std::string::npos) << r.err;
  r = diff("tests/data/diff/base.yaml tests/data/policies/bad/not_in_enum.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("both policies must compile"), std::string::npos) << r.err;
  r = diff("tests/data/diff/base.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
}

// ---- frozen tables ----

// A scratch directory holding the fixtures compiled to tables by the library (lower()), named
// NAME.rgt, plus copies of the fixture policies, so paths in the output are short and stable.
class DiffTables : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("rg_diff_tables_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    for (const char* name : {"base", "unchanged", "safer", "more_dangerous", "renamed", "fields"}) {
      const std::string yaml = kSource + "/tests/data/diff/" + name + ".yaml";
      const replaygate::LoadedPolicy loaded = replaygate::load_policy_file(yaml);
      ASSERT_TRUE(loaded.policy) << yaml;
      const std::vector<uint8_t> bytes = replaygate::lower(*loaded.policy);
      std::ofstream(dir_ / (std::string(name) + ".rgt"), std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
      fs::copy_file(yaml, dir_ / (std::string(name) + ".yaml"),
                    fs::copy_options::overwrite_existing);
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static Result run(const std::string& args) { return diff(args, dir_.string()); }
  static void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  static std::string bytes(const std::string& name) { return read_file(dir_ / name); }

  static fs::path dir_;
};
fs::path DiffTables::dir_;

// The output without its header: the first line (paths), and the lines that name tables.
std::string body(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  bool first = true;
  while (std::getline(in, line)) {
    if (first || line.find("is a frozen table (checksum ") != std::string::npos) {
      first = false;
      continue;
    }
    out += line + "\n";
  }
  return out;
}

TEST_F(DiffTables, UnchangedTablesExitZero) {
  const Result r = run("base.rgt unchanged.rgt");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "table_unchanged.text.expected");
  EXPECT_EQ(body(r.out), body(read_file(kSource + "/tests/data/diff/unchanged.text.expected")));
}

TEST_F(DiffTables, SaferTableExitsOne) {
  for (const char* format : {"text", "json", "markdown"}) {
    const Result r = run(std::string("base.rgt safer.rgt --format ") + format);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    expect_golden(r.out, std::string("table_safer.") + format + ".expected");
  }
  const Result r = run("base.rgt safer.rgt");
  EXPECT_EQ(body(r.out), body(read_file(kSource + "/tests/data/diff/safer.text.expected")));
}

TEST_F(DiffTables, MoreDangerousTableExitsThree) {
  const Result r = run("base.rgt more_dangerous.rgt");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "table_more_dangerous.text.expected");
  EXPECT_EQ(body(r.out),
            body(read_file(kSource + "/tests/data/diff/more_dangerous.text.expected")));
  const Result j = run("base.rgt more_dangerous.rgt --format json");
  EXPECT_EQ(j.exit_code, 3) << j.err;
  EXPECT_NE(j.out.find("\"more_dangerous\": true"), std::string::npos) << j.out;
}

TEST_F(DiffTables, RenamedRuleInATableIsAProvenanceChangeOnly) {
  const Result r = run("base.rgt renamed.rgt");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "table_renamed.text.expected");
  EXPECT_EQ(body(r.out), body(read_file(kSource + "/tests/data/diff/renamed.text.expected")));
}

TEST_F(DiffTables, FieldChangesBetweenTablesAreReported) {
  const Result r = run("base.rgt fields.rgt");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "table_fields.text.expected");
  EXPECT_EQ(body(r.out), body(read_file(kSource + "/tests/data/diff/fields.text.expected")));
}

// The deployed table against a new policy, and a policy against a table.
TEST_F(DiffTables, PolicyAgainstTableBothWays) {
  Result r = run("base.rgt safer.yaml");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(r.out, "table_policy_safer.text.expected");
  EXPECT_EQ(body(r.out), body(read_file(kSource + "/tests/data/diff/safer.text.expected")));
  r = run("base.yaml more_dangerous.rgt --format markdown");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "policy_table_more_dangerous.markdown.expected");
}

// A table is recognised by its magic whatever its name.
TEST_F(DiffTables, TableWithoutTheExtensionIsATable) {
  write("deployed.table", bytes("base.rgt"));
  const Result r = run("deployed.table base.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("old deployed.table is a frozen table (checksum "), std::string::npos)
      << r.out;
}

TEST_F(DiffTables, TablesThatDoNotLoadExitTwo) {
  std::string corrupt = bytes("base.rgt");
  corrupt[corrupt.size() / 2] ^= 0x40;  // payload no longer matches the checksum
  write("corrupt.rgt", corrupt);
  Result r = run("corrupt.rgt safer.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("replaygate: cannot load table corrupt.rgt: bad_checksum: ", 0), 0u)
      << r.err;

  write("short.rgt", bytes("base.rgt").substr(0, 100));
  r = run("base.rgt short.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("replaygate: cannot load table short.rgt: truncated", 0), 0u) << r.err;

  // A policy saved under a table's name is not parsed as a policy.
  write("policy.rgt", bytes("base.yaml"));
  r = run("policy.rgt base.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("replaygate: cannot load table policy.rgt: bad_magic", 0), 0u) << r.err;

  // A valid table that no checked policy lowers to (check() rejects `absent` on a required
  // field) is refused, not diffed wrongly.
  replaygate::testing::PolicyBuilder b;
  b.string_field("topic");
  b.guard("gone", {b.cond("topic", replaygate::ir::Op::kAbsent)}, "never", 10);
  const std::vector<uint8_t> odd = replaygate::lower(b.get());
  write("odd.rgt", std::string(odd.begin(), odd.end()));
  replaygate::LoadStatus status;
  const auto table = replaygate::Table::load_bytes(odd.data(), odd.size(), &status);
  ASSERT_NE(table, nullptr) << status.message;
  r = run("odd.rgt base.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err, "replaygate: error: odd.rgt: table of policy 'test' (checksum " +
                       table->checksum_hex() +
                       ") cannot be lifted exactly: guard 'gone' condition 1: absent on required "
                       "field 'topic'\n");

  r = run("base.rgt missing.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("replaygate: cannot load table missing.rgt: io", 0), 0u) << r.err;
}

}  // namespace
