// The idempotency-key marker in the table (FieldRecord::idempotency_key, formerly the first pad
// byte): set only on the declared field, so a policy without the declaration keeps its bytes;
// Table::idempotency_key_field() and the dump name it; the decision digest covers it; the loader
// refuses it on a non-string field, on two fields, and any value but 0 or 1 (`malformed`).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "compiler/lower.h"
#include "runtime/table.h"
#include "runtime/table_format.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

namespace fm = replaygate::format;
using Bytes = testing::TableBytes;
using testing::load_error;
using testing::reseal;
using testing::section;

// The reference gate: field 3 (idempotency_key, an optional string) is its declared key.
ir::CheckedPolicy gate(bool keyed) {
  ir::CheckedPolicy c = testing::reference_gate();
  c.policy.fields[testing::kIdempotencyKey].idempotency_key = keyed;
  return c;
}

size_t record_offset(const Bytes& bytes, uint32_t field) {
  return section(bytes, fm::kFields).offset + field * sizeof(fm::FieldRecord);
}

fm::FieldRecord record(const Bytes& bytes, uint32_t field) {
  fm::FieldRecord r;
  std::memcpy(&r, bytes.data() + record_offset(bytes, field), sizeof(r));
  return r;
}

// `bytes` with field `field`'s marker byte set to `value`, resealed: the loader's answer.
std::string with_marker(Bytes bytes, uint32_t field, uint8_t value) {
  fm::FieldRecord r = record(bytes, field);
  r.idempotency_key = value;
  std::memcpy(bytes.data() + record_offset(bytes, field), &r, sizeof(r));
  reseal(bytes);
  return load_error(bytes);
}

TEST(IdempotencyKeyTable, MarkerOnlyOnTheDeclaredField) {
  const Bytes keyed = lower(gate(true));
  const Bytes plain = lower(gate(false));
  ASSERT_EQ(keyed.size(), plain.size());
  size_t differing = 0;
  for (size_t i = 0; i < keyed.size(); ++i) differing += keyed[i] != plain[i];
  // The marker byte, the checksum and the decision digest: nothing else moves.
  EXPECT_LE(differing, 1u + 16u + 16u);
  for (uint32_t f = 0; f < 6; ++f) {
    EXPECT_EQ(record(keyed, f).idempotency_key, f == testing::kIdempotencyKey ? 1 : 0) << f;
    EXPECT_EQ(record(plain, f).idempotency_key, 0) << f;
    EXPECT_EQ(record(keyed, f).pad, 0) << f;
  }
  EXPECT_EQ(testing::header_of(keyed).flags, 0u);  // no header flag: the byte is enough

  const auto a = testing::load_lowered(gate(true));
  const auto b = testing::load_lowered(gate(false));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->idempotency_key_field(), testing::kIdempotencyKey);
  EXPECT_EQ(b->idempotency_key_field(), Table::kNoField);
  EXPECT_NE(a->decision_digest_hex(), b->decision_digest_hex());
  EXPECT_EQ(a->provenance_digest_hex(), b->provenance_digest_hex());
  EXPECT_NE(a->dump().find("#3 idempotency_key: string, optional, empty means absent, "
                           "idempotency key\n"),
            std::string::npos)
      << a->dump();
  EXPECT_EQ(b->dump().find(", idempotency key\n"), std::string::npos);
}

TEST(IdempotencyKeyTable, LoaderRefusesABadMarker) {
  const Bytes plain = lower(gate(false));
  // Any one string field passes every structural check (reseal() recomputes every digest, so
  // such a forged marker loads).
  EXPECT_EQ(with_marker(plain, testing::kIdempotencyKey, 1), "");
  EXPECT_EQ(with_marker(plain, testing::kTopic, 1), "");
  EXPECT_EQ(with_marker(plain, testing::kAttempts, 1),
            "malformed: field 2 is the idempotency key but is not a string field");
  EXPECT_EQ(with_marker(plain, testing::kAlreadyCommitted, 1),
            "malformed: field 4 is the idempotency key but is not a string field");
  EXPECT_EQ(with_marker(plain, testing::kIdempotencyKey, 2),
            "malformed: field 3 has a bad type or flag byte");
  const Bytes keyed = lower(gate(true));
  EXPECT_EQ(with_marker(keyed, testing::kTopic, 1),
            "malformed: field 3 is a second idempotency key (field 0 is one)");
}

}  // namespace
}  // namespace replaygate
