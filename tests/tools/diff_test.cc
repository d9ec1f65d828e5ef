// `replaygate diff`: golden outputs for the fixtures in tests/data/diff/ (unchanged, safer, more
// dangerous, renamed-only) in text, JSON and Markdown, and one test per exit code.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

// Runs `replaygate diff ARGS` in the source directory, so paths in the output are relative.
Result diff(const std::string& args) {
  const fs::path out = fs::temp_directory_path() / ("rg_diff_test_" + std::to_string(::getpid()));
  const std::string command = "cd '" + kSource + "' && '" + kBinary + "' diff " + args + " >'" +
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
  r = diff("tests/data/diff/base.yaml tests/data/tables/replay_gate.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is a frozen table"), std::string::npos) << r.err;
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

}  // namespace
