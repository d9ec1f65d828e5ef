// The fail-closed property over every record format (issue 20): a record of any shipped example
// dump, randomly mutated (bytes flipped, cut, inserted or repeated), read through its format's
// reader and example mapping, never yields a create verb unless the inputs the mapping extracted
// from the mutated record are ones the policy replays. The table's decision on the mutated record
// is compared with the reference interpreter's (compiler/interpret.h, the oracle) on exactly the
// inputs the reader extracted; a record the reader refuses gets the policy default, which never
// creates.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/interpret.h"
#include "compiler/lower.h"
#include "inputs/mapping.h"
#include "runtime/table.h"
#include "tests/support/cli_runner.h"
#include "tests/support/example_records.h"
#include "tools/cli/record_reading.h"

namespace replaygate::testing {
namespace {

struct Format {
  ExampleRecords records;
  std::unique_ptr<inputs::LoadedMapping> mapping;
  std::unique_ptr<inputs::RecordParser> parser;
};

struct Fixture {
  std::optional<ir::CheckedPolicy> policy;
  std::unique_ptr<Table> table;
  std::vector<Format> formats;

  Fixture() {
    LoadedPolicy loaded = load_policy_file(kSourceDir + "/policies/replay_gate.yaml");
    policy = std::move(loaded.policy);
    const std::vector<uint8_t> bytes = lower(*policy);
    LoadStatus status;
    table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    for (ExampleRecords& records : example_records(kSourceDir, 12)) {
      Format f;
      const inputs::Mapping* mapping = nullptr;
      if (!records.mapping_path.empty()) {
        f.mapping = std::make_unique<inputs::LoadedMapping>(
            cli::load_mapping_file(kSourceDir + "/" + records.mapping_path, *table));
        mapping = &f.mapping->mapping;
      }
      f.parser = records.format->make_parser(*table, mapping);
      f.records = std::move(records);
      formats.push_back(std::move(f));
    }
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

LetterValue slot_value(const Input::Slot& slot) {
  switch (slot.state) {
    case Input::Slot::State::kUnset:
      return LetterValue::Missing();
    case Input::Slot::State::kNull:
      return LetterValue::Null();
    case Input::Slot::State::kString:
      return LetterValue::String(std::string(slot.s));
    case Input::Slot::State::kInt:
      return LetterValue::Int(slot.i);
    case Input::Slot::State::kBool:
      return LetterValue::Bool(slot.b);
    case Input::Slot::State::kInvalid:
      return LetterValue::Invalid();
  }
  return LetterValue::Invalid();
}

// One edit of a record's bytes; positions are taken modulo the record's size.
struct Mutation {
  enum class Kind { kFlip, kCut, kInsert, kRepeat } kind;
  size_t at = 0, length = 0;
  char byte = 0;
};

// Bytes that change a JSON record's meaning more often than random ones do.
const std::string kInteresting = "\"\\{}[],:0123456789-+.eE \x01\x7f\xff\xc3truefalsnul";

std::string mutate(std::string text, const std::vector<Mutation>& mutations) {
  for (const Mutation& m : mutations) {
    if (text.empty()) break;
    const size_t at = m.at % text.size();
    const size_t length = std::min(m.length, text.size() - at);
    switch (m.kind) {
      case Mutation::Kind::kFlip:
        text[at] = m.byte;
        break;
      case Mutation::Kind::kCut:
        text.erase(at, length);
        break;
      case Mutation::Kind::kInsert:
        text.insert(at, 1, m.byte);
        break;
      case Mutation::Kind::kRepeat:
        text.insert(at, text.substr(at, length));
        break;
    }
  }
  return text;
}

rc::Gen<Mutation> gen_mutation() {
  return rc::gen::apply(
      [](int kind, size_t at, size_t length, size_t byte) {
        return Mutation{static_cast<Mutation::Kind>(kind), at, length,
                        kInteresting[byte % kInteresting.size()]};
      },
      rc::gen::inRange(0, 4), rc::gen::inRange<size_t>(0, 1 << 16), rc::gen::inRange<size_t>(1, 24),
      rc::gen::arbitrary<size_t>());
}

RC_GTEST_PROP(FormatMutation, NeverCreatesUnlessTheExtractedInputReplays, ()) {
  const Fixture& f = fixture();
  const size_t which = *rc::gen::inRange<size_t>(0, f.formats.size());
  const Format& format = f.formats[which];
  const size_t index = *rc::gen::inRange<size_t>(0, format.records.sizes.size());
  const auto mutations =
      *rc::gen::container<std::vector<Mutation>>(*rc::gen::inRange<size_t>(1, 5), gen_mutation());
  std::string text = mutate(std::string(format.records.record(index)), mutations);
  const size_t size = text.size();
  text.append(inputs::LineReader::kPadding, ' ');
  RC_TAG(std::string(format.records.format->name));

  const Table& table = *f.table;
  Input input(table);
  inputs::RecordMeta meta;
  std::string problem;
  if (!format.parser->parse(std::string_view(text.data(), size), input, &meta, &problem)) {
    // decide gives an unreadable record the policy default, which never creates.
    RC_ASSERT(table.verb_effect(table.default_verb()) != Effect::kCreate);
    RC_TAG("unreadable");
    return;
  }
  const Decision decision = table.decide(input);
  Letter letter(table.field_count());
  for (uint32_t field = 0; field < table.field_count(); ++field) {
    letter[field] = slot_value(input.slot(field));
  }
  const InterpretResult oracle = interpret(f.policy->policy, letter);
  RC_ASSERT(decision.verb == oracle.verb);
  if (table.verb_effect(decision.verb) == Effect::kCreate) {
    RC_TAG("create");
    RC_ASSERT(oracle.kind != InterpretKind::kInvalidInput);
  }
}

// The property reaches every format, and mutated records that still decide (not only refusals).
TEST(FormatMutation, EveryExampleRecordDecidesAsTheOracleSays) {
  const Fixture& f = fixture();
  ASSERT_EQ(f.formats.size(), 9u);
  size_t creates = 0;
  for (const Format& format : f.formats) {
    ASSERT_FALSE(format.mapping && has_errors(format.mapping->diagnostics))
        << format.records.mapping_path;
    for (size_t i = 0; i < format.records.sizes.size(); ++i) {
      Input input(*f.table);
      inputs::RecordMeta meta;
      std::string problem;
      if (!format.parser->parse(format.records.record(i), input, &meta, &problem)) continue;
      Letter letter(f.table->field_count());
      for (uint32_t field = 0; field < f.table->field_count(); ++field) {
        letter[field] = slot_value(input.slot(field));
      }
      const Decision decision = f.table->decide(input);
      EXPECT_EQ(decision.verb, interpret(f.policy->policy, letter).verb)
          << format.records.format->name << " record " << i;
      if (f.table->verb_effect(decision.verb) == Effect::kCreate) ++creates;
    }
  }
  EXPECT_GT(creates, 8u);  // the examples replay some records of every format
}

}  // namespace
}  // namespace replaygate::testing
