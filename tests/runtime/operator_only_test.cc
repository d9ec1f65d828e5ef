// Operator-only and record-only fields (policy `source: operator` / `source: record`) in the
// table and the runtime: the FieldRecord source byte and the header flags (only when some field
// has the marker, so other tables keep their bytes), FieldInfo / dump / C API exposure, decide()
// reading the field like any other, reload refusing a change of the marker, and every corrupt
// combination of flags and bytes rejected.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower.h"
#include "runtime/reload.h"
#include "runtime/replaygate.h"
#include "runtime/table.h"
#include "runtime/table_format.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

namespace fm = replaygate::format;
using Bytes = testing::TableBytes;
using testing::header_of;
using testing::load_error;
using testing::put_header;
using testing::reseal;
using testing::section;

// Fields: 0 phase (enum prepared/accepted), 1 confirmed (optional bool, operator-only),
// 2 budget (int >= 0, optional, source `budget_source`), 3 msg, 4 rec (ints), 5 stale = msg <
// rec. Verbs: 0 hold (none, default), 1 dispatch (create).
ir::CheckedPolicy operator_policy(bool marked = true,
                                  ir::InputSource budget_source = ir::InputSource::kLetter) {
  ir::CheckedPolicy c;
  ir::Policy& p = c.policy;
  p.id = "operator";
  p.revision = 1;
  p.fields = {testing::enum_field("phase", {"prepared", "accepted"}),
              testing::bool_field("confirmed", /*optional=*/true),
              testing::int_field("budget", 0, std::nullopt, /*optional=*/true),
              testing::int_field("msg", 0, std::nullopt),
              testing::int_field("rec", 0, std::nullopt),
              testing::bool_field("stale")};
  p.fields[1].source = marked ? ir::InputSource::kOperator : ir::InputSource::kLetter;
  p.fields[2].source = budget_source;
  p.fields[5].derived = ir::Derivation{3, ir::Op::kLt, 4};
  p.verbs = {{"hold", ir::Effect::kNone, "wait"}, {"dispatch", ir::Effect::kCreate, "new work"}};
  p.default_verb = 0;
  p.default_reason = "no rule matched";
  p.rules.emplace_back(
      testing::guard("reviewed",
                     {testing::cond(0, ir::Op::kEq, {ir::Value::String("prepared")}),
                      testing::cond(1, ir::Op::kEq, {ir::Value::Bool(true)}),
                      testing::cond(5, ir::Op::kEq, {ir::Value::Bool(false)})},
                     1, "an operator confirmed"));
  c.source_base_name = "operator.yaml";
  c.source_digest = "00";
  return c;
}

size_t field_record_offset(const Bytes& bytes, uint32_t field) {
  return section(bytes, fm::kFields).offset + field * sizeof(fm::FieldRecord);
}

fm::FieldRecord field_record(const Bytes& bytes, uint32_t field) {
  fm::FieldRecord r;
  std::memcpy(&r, bytes.data() + field_record_offset(bytes, field), sizeof(r));
  return r;
}

TEST(OperatorOnlyTable, MarkerByteAndHeaderFlagOnlyWhenAFieldHasIt) {
  const Bytes marked = lower(operator_policy());
  EXPECT_EQ(header_of(marked).flags, fm::kFlagOperatorFields);
  EXPECT_EQ(field_record(marked, 1).source, fm::kSourceOperator);
  EXPECT_EQ(field_record(marked, 0).source, fm::kSourceLetter);
  EXPECT_EQ(field_record(marked, 2).source, fm::kSourceLetter);
  for (uint32_t f = 0; f < 6; ++f) {
    EXPECT_EQ(field_record(marked, f).idempotency_key, 0) << f;
    EXPECT_EQ(field_record(marked, f).pad, 0) << f;
  }
  EXPECT_EQ(load_error(marked), "");

  // Without any marker: flags 0 and the record byte 0, so the bytes are what they were before
  // the marker existed (tests/compiler/lower_test.cc holds the golden table and digest).
  const Bytes plain = lower(operator_policy(/*marked=*/false));
  EXPECT_EQ(header_of(plain).flags, 0u);
  for (uint32_t f = 0; f < 6; ++f) EXPECT_EQ(field_record(plain, f).source, fm::kSourceLetter) << f;
  EXPECT_EQ(load_error(plain), "");
  EXPECT_EQ(header_of(lower(testing::reference_gate())).flags, 0u);

  // The marker is part of the decision digest (it is in the fields section).
  LoadStatus status;
  auto a = Table::load_bytes(marked.data(), marked.size(), &status);
  auto b = Table::load_bytes(plain.data(), plain.size(), &status);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->decision_digest_hex(), b->decision_digest_hex());
}

TEST(OperatorOnlyTable, ExposedInFieldInfoDumpAndTheCApi) {
  const Bytes bytes = lower(operator_policy(true, ir::InputSource::kOperator));
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(table) << status.message;
  EXPECT_FALSE(table->field(0).operator_only);
  EXPECT_TRUE(table->field(1).operator_only);
  EXPECT_TRUE(table->field(2).operator_only);
  EXPECT_FALSE(table->field(99).operator_only);
  const std::string dump = table->dump();
  EXPECT_NE(dump.find("  #1 confirmed: bool, optional, set by an operator only\n"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("  #2 budget: int, optional, min 0, set by an operator only\n"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("  #0 phase: enum, required\n"), std::string::npos) << dump;

  rg_table* t = nullptr;
  rg_error err;
  ASSERT_EQ(rg_table_load_bytes(bytes.data(), bytes.size(), &t, &err), RG_OK) << err.message;
  EXPECT_EQ(rg_table_field_operator_only(t, 0), 0);
  EXPECT_EQ(rg_table_field_operator_only(t, 1), 1);
  EXPECT_EQ(rg_table_field_operator_only(t, 2), 1);
  EXPECT_EQ(rg_table_field_operator_only(t, 6), 0);
  EXPECT_EQ(rg_table_field_operator_only(nullptr, 1), 0);
  rg_table_free(t);
}

// decide() reads an operator-only field like any other: the embedding worker sets it from its
// operator channel (the letter readers are what leave it unset, tests/tools).
TEST(OperatorOnlyDecide, TheRuntimeReadsTheFieldTheCallerSets) {
  const Bytes bytes = lower(operator_policy());
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(table) << status.message;
  Input in(*table);
  auto run = [&](int confirmed) {
    in.clear();
    in.set_string(0, "prepared");
    in.set_int(3, 2);
    in.set_int(4, 2);
    if (confirmed >= 0) in.set_bool(1, confirmed == 1);
    const Decision d = table->decide(in);
    return std::string(table->verb_name(d.verb)) + "/" + std::string(table->rule_name(d));
  };
  EXPECT_EQ(run(1), "dispatch/reviewed");
  EXPECT_EQ(run(0), "hold/default");
  EXPECT_EQ(run(-1), "hold/default");  // unset: absent, the guard fails
}

// Rewrites field `field`'s record with `edit`, optionally the header flags, and reseals.
template <typename Edit>
std::string with_field(uint32_t field, Edit edit, std::optional<uint32_t> flags = std::nullopt,
                       bool marked = true) {
  Bytes bytes = lower(operator_policy(marked));
  fm::FieldRecord r = field_record(bytes, field);
  edit(r);
  std::memcpy(bytes.data() + field_record_offset(bytes, field), &r, sizeof(r));
  if (flags) {
    fm::Header h = header_of(bytes);
    h.flags = *flags;
    put_header(bytes, h);
  }
  reseal(bytes);
  return load_error(bytes);
}

TEST(OperatorOnlyLoad, CorruptMarkersAndFlagsAreRejected) {
  const auto keep = [](fm::FieldRecord&) {};
  EXPECT_EQ(with_field(1, keep), "");
  const std::string bad_byte = "malformed: field 1 has a bad type or flag byte";
  EXPECT_EQ(with_field(1, [](fm::FieldRecord& r) { r.source = 3; }), bad_byte);
  EXPECT_EQ(with_field(1, [](fm::FieldRecord& r) { r.idempotency_key = 2; }), bad_byte);
  EXPECT_EQ(with_field(1, [](fm::FieldRecord& r) { r.pad = 0x80; }), bad_byte);
  // A pad byte is rejected in a table without any marker too.
  EXPECT_EQ(with_field(
                0, [](fm::FieldRecord& r) { r.pad = 1; }, std::nullopt, false),
            "malformed: field 0 has a bad type or flag byte");
  // The marker without the header flag (what an old writer could never produce), and the flag
  // without a marker.
  EXPECT_EQ(with_field(1, keep, 0u),
            "malformed: field 1 is operator-only but the header lacks the operator-fields flag");
  EXPECT_EQ(with_field(1, keep, fm::kFlagOperatorFields, /*marked=*/false),
            "malformed: the header's operator-fields flag is set but no field is operator-only");
  // An unknown flag bit, alone or next to the known ones.
  EXPECT_EQ(with_field(1, keep, 4u), "malformed: unknown flags 4");
  EXPECT_EQ(with_field(1, keep, 5u), "malformed: unknown flags 5");
  // Never on a derived field (field 5 is stale = msg < rec).
  EXPECT_EQ(with_field(5, [](fm::FieldRecord& r) { r.source = fm::kSourceOperator; }),
            "malformed: derivation 0 must compare two required ints into a required bool");
}

TEST(OperatorOnlyReload, AChangedMarkerIsIncompatible) {
  const Bytes marked = lower(operator_policy());
  const Bytes plain = lower(operator_policy(false));
  LoadStatus status;
  auto table = Table::load_bytes(marked.data(), marked.size(), &status);
  ASSERT_TRUE(table) << status.message;
  auto shared = std::make_unique<SharedTable>(std::move(table), 2);
  EXPECT_FALSE(shared->reload_bytes(plain.data(), plain.size(), &status));
  EXPECT_EQ(status.message,
            "incompatible table: field 1 (confirmed) is set from letters, the current table has it "
            "as operator-only");
  EXPECT_TRUE(shared->reload_bytes(marked.data(), marked.size(), &status)) << status.message;
}

// ---- record-only (`source: record`): byte 2 and flag bit 1 ----

TEST(RecordOnlyTable, SourceByteTwoAndItsOwnHeaderFlag) {
  const Bytes bytes = lower(operator_policy(/*marked=*/false, ir::InputSource::kRecord));
  EXPECT_EQ(header_of(bytes).flags, fm::kFlagRecordFields);
  EXPECT_EQ(field_record(bytes, 2).source, fm::kSourceRecord);
  EXPECT_EQ(field_record(bytes, 1).source, fm::kSourceLetter);
  EXPECT_EQ(load_error(bytes), "");
  const Bytes both = lower(operator_policy(/*marked=*/true, ir::InputSource::kRecord));
  EXPECT_EQ(header_of(both).flags, fm::kFlagOperatorFields | fm::kFlagRecordFields);
  // A table with operator-only fields only keeps the bytes it had before record-only fields.
  EXPECT_EQ(header_of(lower(operator_policy())).flags, fm::kFlagOperatorFields);

  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(table) << status.message;
  EXPECT_EQ(table->field(2).source, FieldSource::kRecord);
  EXPECT_FALSE(table->field(2).operator_only);
  EXPECT_EQ(table->field(0).source, FieldSource::kLetter);
  EXPECT_EQ(table->field(99).source, FieldSource::kLetter);
  EXPECT_STREQ(field_source_name(FieldSource::kRecord), "record");
  const std::string dump = table->dump();
  EXPECT_NE(dump.find("  #2 budget: int, optional, min 0, read from the operation record only\n"),
            std::string::npos)
      << dump;

  rg_table* t = nullptr;
  rg_error err;
  ASSERT_EQ(rg_table_load_bytes(both.data(), both.size(), &t, &err), RG_OK) << err.message;
  EXPECT_EQ(rg_table_field_source(t, 0), static_cast<uint32_t>(RG_SOURCE_LETTER));
  EXPECT_EQ(rg_table_field_source(t, 1), static_cast<uint32_t>(RG_SOURCE_OPERATOR));
  EXPECT_EQ(rg_table_field_source(t, 2), static_cast<uint32_t>(RG_SOURCE_RECORD));
  EXPECT_EQ(rg_table_field_source(t, 6), RG_NO_INDEX);
  EXPECT_EQ(rg_table_field_source(nullptr, 1), RG_NO_INDEX);
  EXPECT_EQ(rg_table_field_operator_only(t, 2), 0);  // unchanged meaning: operator-only only
  EXPECT_EQ(rg_table_field_operator_only(t, 1), 1);
  rg_table_free(t);
}

TEST(RecordOnlyLoad, CorruptMarkersAndFlagsAreRejected) {
  const auto load = [](uint32_t field, uint8_t source, uint32_t flags) {
    Bytes bytes = lower(operator_policy(/*marked=*/false, ir::InputSource::kRecord));
    fm::FieldRecord r = field_record(bytes, field);
    r.source = source;
    std::memcpy(bytes.data() + field_record_offset(bytes, field), &r, sizeof(r));
    fm::Header h = header_of(bytes);
    h.flags = flags;
    put_header(bytes, h);
    reseal(bytes);
    return load_error(bytes);
  };
  EXPECT_EQ(load(2, fm::kSourceRecord, fm::kFlagRecordFields), "");
  // The byte without its flag (what a loader that knows only bit 0 would also refuse).
  EXPECT_EQ(load(2, fm::kSourceRecord, 0),
            "malformed: field 2 is record-only but the header lacks the record-fields flag");
  EXPECT_EQ(load(2, fm::kSourceRecord, fm::kFlagOperatorFields),
            "malformed: field 2 is record-only but the header lacks the record-fields flag");
  // The flag without a record-only field.
  EXPECT_EQ(load(2, fm::kSourceLetter, fm::kFlagRecordFields),
            "malformed: the header's record-fields flag is set but no field is record-only");
  // Never on a derived field.
  EXPECT_EQ(load(5, fm::kSourceRecord, fm::kFlagRecordFields),
            "malformed: derivation 0 must compare two required ints into a required bool");
}

TEST(RecordOnlyReload, AChangedSourceIsIncompatible) {
  const Bytes record = lower(operator_policy(false, ir::InputSource::kRecord));
  const Bytes by_operator = lower(operator_policy(false, ir::InputSource::kOperator));
  const Bytes plain = lower(operator_policy(false));
  LoadStatus status;
  auto table = Table::load_bytes(record.data(), record.size(), &status);
  ASSERT_TRUE(table) << status.message;
  auto shared = std::make_unique<SharedTable>(std::move(table), 2);
  EXPECT_FALSE(shared->reload_bytes(plain.data(), plain.size(), &status));
  EXPECT_EQ(status.message,
            "incompatible table: field 2 (budget) is set from letters, the current table has it "
            "as record-only");
  EXPECT_FALSE(shared->reload_bytes(by_operator.data(), by_operator.size(), &status));
  EXPECT_EQ(status.message,
            "incompatible table: field 2 (budget) is operator-only, the current table has it as "
            "record-only");
  EXPECT_TRUE(shared->reload_bytes(record.data(), record.size(), &status)) << status.message;
}

// The tester's attack (issue 17, follow-up): two policies identical but for `source: operator`
// (or `source: record`) on one field. An input made on table A, where the field is set from
// letters, may set it with the generic setter; decided on table B, which takes it only from an
// operator (or the record), it must be refused (RG_ERR_ARGUMENT: another field layout, since the
// layout fingerprint includes each field's source), never decided to the create verb.
TEST(SourceInLayout, AnInputMadeWhereTheFieldIsALetterFieldIsRefusedWhereItIsNot) {
  const Bytes plain = lower(operator_policy(false));
  const Bytes by_operator = lower(operator_policy(true));
  const Bytes by_record = lower(operator_policy(false, ir::InputSource::kRecord));
  rg_table *a = nullptr, *b = nullptr, *c = nullptr;
  rg_error err;
  ASSERT_EQ(rg_table_load_bytes(plain.data(), plain.size(), &a, &err), RG_OK) << err.message;
  ASSERT_EQ(rg_table_load_bytes(by_operator.data(), by_operator.size(), &b, &err), RG_OK);
  ASSERT_EQ(rg_table_load_bytes(by_record.data(), by_record.size(), &c, &err), RG_OK);
  EXPECT_EQ(rg_table_field_source(a, 1), RG_SOURCE_LETTER);
  EXPECT_EQ(rg_table_field_source(b, 1), RG_SOURCE_OPERATOR);
  EXPECT_EQ(rg_table_field_source(c, 2), RG_SOURCE_RECORD);
  // stale (field 5) is derived: no one supplies it (bindings refuse it as a dedupe field).
  EXPECT_EQ(rg_table_field_derived(a, 5), 1);
  EXPECT_EQ(rg_table_field_derived(a, 1), 0);
  EXPECT_EQ(rg_table_field_derived(a, 99), 0);
  EXPECT_EQ(rg_table_field_derived(nullptr, 5), 0);
  rg_input* in = nullptr;
  ASSERT_EQ(rg_input_new(a, &in), RG_OK);
  ASSERT_EQ(rg_input_set_string_by_name(in, "phase", "prepared", 8), RG_OK);
  ASSERT_EQ(rg_input_set_int_by_name(in, "msg", 2), RG_OK);
  ASSERT_EQ(rg_input_set_int_by_name(in, "rec", 2), RG_OK);
  // On A `confirmed` is a letter field: the generic setter takes it, and A dispatches.
  ASSERT_EQ(rg_input_set_bool(in, 1, 1), RG_OK);
  ASSERT_EQ(rg_input_set_int(in, 2, 5), RG_OK);
  rg_decision d{};
  ASSERT_EQ(rg_decide(a, in, &d), RG_OK);
  EXPECT_EQ(rg_table_verb_name(a, d.verb).size, 8u);  // "dispatch"
  EXPECT_EQ(d.effect, static_cast<uint32_t>(RG_EFFECT_CREATE));
  // On B (`confirmed` operator-only) and C (`budget` record-only): refused, *out untouched.
  for (rg_table* other : {b, c}) {
    rg_decision untouched{};
    untouched.verb = 77;
    EXPECT_EQ(rg_decide(other, in, &untouched), RG_ERR_ARGUMENT);
    EXPECT_EQ(untouched.verb, 77u);
    EXPECT_EQ(untouched.effect, 0u);
  }
  // An input made on B itself cannot take `confirmed` from the generic setter.
  rg_input* own = nullptr;
  ASSERT_EQ(rg_input_new(b, &own), RG_OK);
  EXPECT_EQ(rg_input_set_bool(own, 1, 1), RG_ERR_OPERATOR_ONLY);
  // The fingerprints differ exactly by the source.
  LoadStatus status;
  auto ta = Table::load_bytes(plain.data(), plain.size(), &status);
  auto tb = Table::load_bytes(by_operator.data(), by_operator.size(), &status);
  auto tc = Table::load_bytes(by_record.data(), by_record.size(), &status);
  ASSERT_TRUE(ta && tb && tc);
  EXPECT_NE(SharedTable::layout_fingerprint(*ta), SharedTable::layout_fingerprint(*tb));
  EXPECT_NE(SharedTable::layout_fingerprint(*ta), SharedTable::layout_fingerprint(*tc));
  EXPECT_NE(SharedTable::layout_fingerprint(*tb), SharedTable::layout_fingerprint(*tc));
  rg_input_free(own);
  rg_input_free(in);
  rg_table_free(a);
  rg_table_free(b);
  rg_table_free(c);
}

}  // namespace
}  // namespace replaygate
