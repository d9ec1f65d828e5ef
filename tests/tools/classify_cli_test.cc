// The starter classifications through the CLI: `replaygate test` runs each fragment's cases (real
// HTTP, SMTP, gRPC and SQLSTATE codes), `explain` shows raw value -> class, `diff` names the raw
// codes a changed classifier moves, and `convert` round-trips a fragment through the .policy form.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;

CliResult run_in_source(const std::vector<std::string>& args,
                        std::optional<std::string> stdin_text = std::nullopt) {
  const ScratchDir scratch("rg_classify_cli");
  CliRun run;
  run.args = args;
  run.cwd = kSourceDir;
  run.stdin_text = std::move(stdin_text);
  return run_cli(scratch.path(), run);
}

TEST(ClassifyCli, StarterFragmentsDecideRealCodes) {
  for (const char* name : {"http", "smtp", "grpc", "sqlstate"}) {
    for (const char* ext : {".yaml", ".policy"}) {
      const std::string policy = std::string("policies/classify/") + name + ext;
      const CliResult r = run_in_source({"test", policy});
      EXPECT_EQ(r.exit_code, 0) << policy << "\n" << r.out << r.err;
      EXPECT_NE(r.out.find("passed"), std::string::npos) << r.out;
    }
  }
}

TEST(ClassifyCli, ExplainShowsTheRawValueAndItsClass) {
  const CliResult r = run_in_source({"explain", "--policy", "policies/classify/http.yaml"},
                                    std::string("{\"http_status\": 503}\n"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(classified: http_status 503, row 1 (in))"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replay_once"), std::string::npos) << r.out;
}

TEST(ClassifyCli, DiffNamesTheReclassifiedCodes) {
  const ScratchDir scratch("rg_classify_diff");
  std::string text = read_file(fs::path(kSourceDir) / "policies/classify/http.yaml");
  const std::string from = "in: [501, 505]";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "in: [505]");
  text.replace(text.find("{class: retryable, in: [408, 425, 429, 500, 502, 503, 504]}"),
               std::string("{class: retryable, in: [408, 425, 429, 500, 502, 503, 504]}").size(),
               "{class: retryable, in: [408, 425, 429, 500, 501, 502, 503, 504]}");
  write_file(scratch.path() / "http.yaml", text);
  const CliResult r = run_cli_args(
      scratch.path(), {"diff", (fs::path(kSourceDir) / "policies/classify/http.yaml").string(),
                       (scratch.path() / "http.yaml").string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // never -> replay_once is more dangerous
  EXPECT_NE(r.out.find("reclassified http_status 501: permanent -> retryable"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"http_status\": 501"), std::string::npos) << r.out;
}

TEST(ClassifyCli, ConvertRoundTripsAFragment) {
  const ScratchDir scratch("rg_classify_convert");
  const CliResult to_dsl = run_in_source({"convert", "policies/classify/sqlstate.yaml"});
  ASSERT_EQ(to_dsl.exit_code, 0) << to_dsl.err;
  EXPECT_NE(to_dsl.out.find("classify sqlstate {"), std::string::npos) << to_dsl.out;
  write_file(scratch.path() / "s.policy", to_dsl.out);
  const CliResult back =
      run_cli_args(scratch.path(), {"convert", (scratch.path() / "s.policy").string()});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  write_file(scratch.path() / "s.yaml", back.out);
  const CliResult d = run_cli_args(
      scratch.path(), {"diff", (fs::path(kSourceDir) / "policies/classify/sqlstate.yaml").string(),
                       (scratch.path() / "s.yaml").string()});
  EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
}

}  // namespace
