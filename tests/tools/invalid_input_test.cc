// End-to-end tests of where and why for an invalid input: decide's "column" (the 1-based byte
// column of the field's value in the line, when the letter gives one) and "problem" (the runtime
// trace's word for it) after "invalid": true, with --format letters and kafka (problem only: a
// mapped value has no one place), and what --audit records for such a record. Exact output lines.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const char kGate[] = "policies/replay_gate.yaml";
const char kRecovery[] = "policies/generation_recovery.yaml";

class InvalidInputTest : public CliFixture {
 protected:
  InvalidInputTest() : CliFixture(kSourceDir) {}
};

// The table checksum of the output `out` (read from its first line).
std::string checksum_of(const std::string& out) {
  const size_t at = out.find("\"table\":\"");
  return at == std::string::npos ? "" : out.substr(at + 9, 32);
}

// The decide output line for record `n` of replay_gate.yaml whose `field` is invalid: `meta` is
// the echoed metadata (",\"message_id\":\"m\"" or ""), `column` 0 for none, `problem` as JSON.
std::string gate_line(int n, const std::string& meta, const std::string& field,
                      const std::string& checksum, int column, const std::string& problem) {
  return "{\"n\":" + std::to_string(n) + meta +
         ",\"verb\":\"hold\",\"effect\":\"none\",\"action\":\"nothing\",\"rule\":\"default\","
         "\"reason\":\"invalid input: " +
         field + "\",\"policy\":\"dlq-replay-gate\",\"revision\":1,\"table\":\"" + checksum +
         "\",\"invalid\":true" + (column > 0 ? ",\"column\":" + std::to_string(column) : "") +
         ",\"problem\":\"" + problem + "\"}\n";
}

const char kTail[] = R"("topic":"payment.capture","error_class":"timeout","idempotency_key":"k",)"
                     R"("already_committed":false)";

}  // namespace

// Each way an int field fails, with its value at byte 13 ({"attempts": is 12 bytes): below the
// min, a string, a float, null; a required field that is missing has no column. A letter marks a
// value of the wrong JSON type invalid without saying which, so the trace says "unreadable".
TEST_F(InvalidInputTest, DecideLettersSayWhereAndWhy) {
  const std::string tail = kTail;
  const std::string letters = "{\"attempts\":-1," + tail + "}\n" +     //
                              "{\"attempts\":\"1\"," + tail + "}\n" +  //
                              "{\"attempts\":1.5," + tail + "}\n" +    //
                              "{\"attempts\":null," + tail + "}\n" +   //
                              "{" + tail + "}\n";
  const CliResult r = run({"decide", "--policy", kGate}, letters);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string checksum = checksum_of(r.out);
  const std::string unreadable = "unreadable (wrong JSON type or out of int64 range)";
  EXPECT_EQ(r.out, gate_line(1, "", "attempts", checksum, 13, "below its min 0") +
                       gate_line(2, "", "attempts", checksum, 13, unreadable) +
                       gate_line(3, "", "attempts", checksum, 13, unreadable) +
                       gate_line(4, "", "attempts", checksum, 13, "null") +
                       gate_line(5, "", "attempts", checksum, 0, "missing"));
}

// The column is of the value's first byte, in bytes: after a key written with an escape and white
// space (a tab included) around its colon; after multi-byte UTF-8 in the metadata and in another
// field's value; for the last member; and for the first invalid field in declaration order
// (attempts before already_committed), wherever each is in the line.
TEST_F(InvalidInputTest, DecideColumnIsTheValuesFirstByte) {
  const std::string tail = kTail;
  const std::string letters =
      "{\"topic\":\"payment.capture\", \"att\\u0065mpts\" :\t -7,\"error_class\":\"timeout\","
      "\"idempotency_key\":\"k\",\"already_committed\":false}\n"
      "{\"message_id\":\"m-\xC3\xA9\xE2\x9C\x93\",\"topic\":\"caf\xC3\xA9 \xE2\x98\x83\","
      "\"attempts\":-2,\"error_class\":\"timeout\",\"idempotency_key\":\"k\","
      "\"already_committed\":false}\n"
      "{" +
      tail +
      ",\"attempts\":-3}\n"
      "{\"already_committed\":\"no\",\"attempts\":-4,\"topic\":\"payment.capture\","
      "\"error_class\":\"timeout\",\"idempotency_key\":\"k\"}\n"
      "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":0,"
      "\"idempotency_key\":\"k\",\"already_committed\":  {\"a\":[1]}}\n";
  const CliResult r = run({"decide", "--policy", kGate}, letters);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string checksum = checksum_of(r.out);
  EXPECT_EQ(r.out, gate_line(1, "", "attempts", checksum, 48, "below its min 0") +
                       gate_line(2, ",\"message_id\":\"m-\xC3\xA9\xE2\x9C\x93\"", "attempts",
                                 checksum, 56, "below its min 0") +
                       gate_line(3, "", "attempts", checksum, 111, "below its min 0") +
                       gate_line(4, "", "attempts", checksum, 38, "below its min 0") +
                       gate_line(5, "", "already_committed", checksum, 109,
                                 "unreadable (wrong JSON type or out of int64 range)"));
}

// An enum value that is not one of the enum's, a required field given null, and one missing; the
// metadata echoed before them as usual.
TEST_F(InvalidInputTest, DecideEnumAndRequiredFields) {
  const std::string letters =
      "{\"phase\":\"paused\",\"message_revision\":1,\"record_revision\":1}\n"
      "{\"message_id\":\"m2\",\"phase\":\"accepted\",\"message_revision\":null,"
      "\"record_revision\":1}\n"
      "{\"phase\":\"accepted\",\"record_revision\":1}\n";
  // The shipped policy's phase is record-only (never read from a letter): a copy without the
  // marker, so the letters' phases are read.
  const CliResult r = run({"decide", "--policy", letter_state_recovery_policy(dir_)}, letters);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string checksum = checksum_of(r.out);
  const auto line = [&](int n, const std::string& meta, const std::string& field, int column,
                        const std::string& problem) {
    return "{\"n\":" + std::to_string(n) + meta +
           ",\"verb\":\"manual_reconciliation\",\"effect\":\"none\",\"action\":\"nothing\","
           "\"rule\":"
           "\"default\",\"reason\":\"invalid input: " +
           field + "\",\"policy\":\"generation-recovery\",\"revision\":1,\"table\":\"" + checksum +
           "\",\"invalid\":true" + (column > 0 ? ",\"column\":" + std::to_string(column) : "") +
           ",\"problem\":\"" + problem + "\"}\n";
  };
  EXPECT_EQ(r.out, line(1, "", "phase", 10, "not one of its enum values") +
                       line(2, ",\"message_id\":\"m2\"", "message_revision", 58, "null") +
                       line(3, "", "message_revision", 0, "missing"));
}

// A valid record's line is unchanged (no column, no problem), before and after an invalid one
// in the same batch.
TEST_F(InvalidInputTest, DecideValidRecordsAreUnchanged) {
  const std::string tail = kTail;
  const std::string valid =
      "{\"attempts\":1,\"topic\":\"payment.capture\",\"error_class\":\"insufficient_funds\","
      "\"idempotency_key\":\"k\",\"already_committed\":false}\n";
  const CliResult r =
      run({"decide", "--policy", kGate}, valid + "{\"attempts\":-1," + tail + "}\n" + valid);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string checksum = checksum_of(r.out);
  const auto valid_line = [&](int n) {
    return "{\"n\":" + std::to_string(n) +
           ",\"verb\":\"never\",\"effect\":\"none\",\"action\":\"nothing\",\"rule\":"
           "\"known_failures:payment.capture/insufficient_funds\",\"reason\":\"the card was "
           "declined; a retry cannot succeed and would only repeat the attempt\",\"policy\":"
           "\"dlq-replay-gate\",\"revision\":1,\"table\":\"" +
           checksum + "\",\"invalid\":false}\n";
  };
  EXPECT_EQ(r.out, valid_line(1) + gate_line(2, "", "attempts", checksum, 13, "below its min 0") +
                       valid_line(3));
}

// kcat -J lines: a mapped value the runtime refuses gets the problem but no column (it comes from
// inside the payload's JSON string or a header, not from one place of the line).
TEST_F(InvalidInputTest, DecideKafkaSaysWhyWithoutColumn) {
  const std::string head =
      R"({"topic":"payment.capture.DLT","partition":0,"offset":7,"headers":[)"
      R"("kafka_dlt-original-topic","payment.capture","kafka_dlt-exception-cause-fqcn",)"
      R"("java.net.SocketTimeoutException")";
  const std::string input =
      head +
      R"(],"key":"k","payload":"{\"attempts\":-1,\"committed\":false}"})"
      "\n" +
      head +
      R"(,"x-replay","-2"],"key":"k","payload":"{\"attempts\":1,\"committed\":false}"})"
      "\n";
  const CliResult r = run({"decide", "--policy", kGate, "--format", "kafka", "--mapping",
                           "examples/kafka-spring-dlt.mapping.yaml"},
                          input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string checksum = checksum_of(r.out);
  EXPECT_EQ(r.out, gate_line(1, ",\"message_id\":\"payment.capture.DLT/0/7\"", "attempts", checksum,
                             0, "below its min 0") +
                       gate_line(2, ",\"message_id\":\"payment.capture.DLT/0/7\"", "replays",
                                 checksum, 0, "below its min 0"));
}

// The audit entry of an invalid input is what it was (it never repeated the output line: no
// reason, column or problem), and the log still verifies.
TEST_F(InvalidInputTest, DecideAuditKeepsItsEntries) {
  const std::string log = (dir_ / "audit.log").string();
  const std::string tail = kTail;
  const CliResult r = run({"decide", "--policy", kGate, "--audit", log, "--operator", "ops"},
                          "{\"message_id\":\"m1\",\"attempts\":-1," + tail + "}\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, gate_line(1, ",\"message_id\":\"m1\"", "attempts", checksum_of(r.out), 31,
                             "below its min 0"));
  const std::string entries = read_file(log);
  EXPECT_NE(entries.find("\"message_id\":\"m1\""), std::string::npos) << entries;
  EXPECT_EQ(entries.find("column"), std::string::npos) << entries;
  EXPECT_EQ(entries.find("problem"), std::string::npos) << entries;
  const CliResult verified = run({"audit", "verify", log});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
}
