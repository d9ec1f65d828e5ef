// Robustness of the record readers: every truncation and many byte mutations of real letters and
// kcat records must give either a readable record or a named problem, never a crash or a hang.
// (A deterministic, in-process stand-in for fuzzing; runs under the ASan+UBSan build too.)
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "inputs/kafka.h"
#include "inputs/letters.h"
#include "inputs/mapping.h"
#include "inputs/records.h"
#include "runtime/table.h"
#include "tests/support/paths.h"
#include "tools/cli/files.h"
#include "tools/cli/record_reading.h"

namespace replaygate::cli {
namespace {

using inputs::KafkaParser;
using inputs::LetterParser;
using inputs::LineReader;
using inputs::LoadedMapping;
using inputs::RecordMeta;
using inputs::RecordParser;

const std::string kSource = RG_SOURCE_DIR;

std::unique_ptr<Table> shipped_table() {
  const LoadedPolicy loaded = load_policy_file(kSource + "/policies/replay_gate.yaml");
  if (!loaded.policy) return nullptr;
  const std::vector<uint8_t> bytes = lower(*loaded.policy);
  LoadStatus status;
  return Table::load_bytes(bytes.data(), bytes.size(), &status);
}

std::vector<std::string> lines_of_file(const std::string& path) {
  std::string text, error;
  EXPECT_TRUE(read_whole_file(path, 1 << 24, &text, &error)) << error;
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Parses `line` on padded memory and checks the contract of RecordParser::parse: a named problem,
// and a problem_offset() inside the line (or its end) when there is one. With `placed`, every
// "invalid record" but a blank line has one (the letters reader: its problems are all in the line).
// A readable record the runtime finds invalid: field_value_offset() is inside the line and, with
// `placed`, there whenever the field was given.
void check_one(RecordParser& parser, Input& input, const Table& table, const std::string& line,
               bool placed) {
  std::string padded = line;
  padded.append(LineReader::kPadding, ' ');
  RecordMeta meta;
  std::string problem;
  const bool ok =
      parser.parse(std::string_view(padded.data(), line.size()), input, &meta, &problem);
  if (ok) {
    const Decision d = table.decide(input);
    EXPECT_LT(d.verb, table.verb_count());
    if (d.kind == DecisionKind::kInvalidInput) {
      const std::string_view view(padded.data(), line.size());
      const size_t offset = parser.field_value_offset(view, d.invalid_field);
      if (offset != RecordParser::kNoOffset) {
        EXPECT_LT(offset, line.size()) << line;
      }
      if (placed && input.slot(d.invalid_field).state != Input::Slot::State::kUnset) {
        EXPECT_NE(offset, RecordParser::kNoOffset) << line;
      }
    }
  } else {
    const bool named =
        problem.rfind("invalid record: ", 0) == 0 || problem.rfind("invalid input: ", 0) == 0;
    EXPECT_TRUE(named) << problem << "\nfor: " << line;
    const size_t offset = parser.problem_offset();
    if (offset != RecordParser::kNoOffset) {
      EXPECT_LE(offset, line.size()) << problem << "\nfor: " << line;
    }
    if (problem.rfind("invalid input: ", 0) == 0 || problem == "invalid record: blank line") {
      EXPECT_EQ(offset, RecordParser::kNoOffset) << problem << "\nfor: " << line;
    } else if (placed) {
      EXPECT_NE(offset, RecordParser::kNoOffset) << problem << "\nfor: " << line;
    }
  }
}

void mutate_all(RecordParser& parser, const Table& table, const std::vector<std::string>& lines,
                bool placed) {
  Input input(table);
  for (const std::string& line : lines) {
    check_one(parser, input, table, line, placed);
    for (size_t cut = 0; cut < line.size(); ++cut) {
      check_one(parser, input, table, line.substr(0, cut), placed);
    }
    const char replacements[] = {'{', '}', '[', ']', '"', '\\', ',', ':', '0', '\0', '\xff', ' '};
    for (size_t at = 0; at < line.size(); at += 3) {
      for (const char c : replacements) {
        std::string mutated = line;
        mutated[at] = c;
        check_one(parser, input, table, mutated, placed);
      }
    }
  }
}

TEST(ReaderRobustness, LettersSurviveTruncationAndMutation) {
  const auto table = shipped_table();
  ASSERT_NE(table, nullptr);
  LetterParser parser(*table);
  auto lines = lines_of_file(kSource + "/tests/data/letters/records.jsonl");
  const auto more = lines_of_file(kSource + "/examples/letters.jsonl");
  lines.insert(lines.end(), more.begin(), more.end());
  mutate_all(parser, *table, lines, /*placed=*/true);
}

TEST(ReaderRobustness, KafkaRecordsSurviveTruncationAndMutation) {
  const auto table = shipped_table();
  ASSERT_NE(table, nullptr);
  const LoadedMapping mapping =
      load_mapping_file(kSource + "/tests/data/mapping/spring.mapping.yaml", *table);
  ASSERT_FALSE(has_errors(mapping.diagnostics));
  KafkaParser parser(*table, mapping.mapping);
  auto lines = lines_of_file(kSource + "/tests/data/mapping/records.kcat.jsonl");
  // Two lines of the shipped dump (with Spring's binary headers) as well.
  const auto dump = lines_of_file(kSource + "/examples/payments-dlt.kcat.jsonl");
  ASSERT_GE(dump.size(), 2u);
  lines.push_back(dump[0]);
  lines.push_back(dump[1]);
  mutate_all(parser, *table, lines, /*placed=*/false);
}

}  // namespace
}  // namespace replaygate::cli
