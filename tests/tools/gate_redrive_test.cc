// The live gate's broker-free parts: the amqp:// URL, the verb -> action map, an AMQP envelope as
// the `rabbitmq` record (and its poison forms), the republish headers, and redrive::Redrive's
// letter step with a real SQLite ledger (claim, outcome unknown, already confirmed, another
// message's key, no key, no target, a filter that skips before any claim).
#include <amqp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "redrive/rabbitmq/amqp_client.h"
#include "redrive/rabbitmq/envelope_record.h"
#include "redrive/redrive.h"
#include "runtime/table.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

namespace rmq = redrive::rabbitmq;
using nlohmann::json;

TEST(AmqpUrl, ParsesWhatUsersWrite) {
  std::string problem;
  std::optional<rmq::AmqpUrl> url =
      rmq::parse_amqp_url("amqp://ops:s%40cret@mq.local:5673/%2F", &problem);
  ASSERT_TRUE(url) << problem;
  EXPECT_EQ(url->user, "ops");
  EXPECT_EQ(url->password, "s@cret");
  EXPECT_EQ(url->host, "mq.local");
  EXPECT_EQ(url->port, 5673);
  EXPECT_EQ(url->vhost, "/");
  EXPECT_EQ(url->describe(), "amqp://ops@mq.local:5673/%2F") << "no password in messages";
  url = rmq::parse_amqp_url("amqp://127.0.0.1/payments", &problem);
  ASSERT_TRUE(url);
  EXPECT_EQ(url->port, 5672);
  EXPECT_EQ(url->user, "guest");
  EXPECT_EQ(url->vhost, "payments");
  url = rmq::parse_amqp_url("amqp://127.0.0.1:5672/", &problem);
  ASSERT_TRUE(url);
  EXPECT_EQ(url->vhost, "/") << "an empty vhost means /";
  for (const char* bad : {"amqps://h/", "http://h/", "amqp://h:0/", "amqp://h:99999/",
                          "amqp://h:x/", "amqp:///vhost", "amqp://h/%zz"}) {
    EXPECT_FALSE(rmq::parse_amqp_url(bad, &problem)) << bad;
    EXPECT_FALSE(problem.empty()) << bad;
  }
}

class GateRedrive : public CliFixture {
 protected:
  void SetUp() override {
    table_ = shipped_table();
    ASSERT_TRUE(table_);
    const std::string path = kSourceDir + "/examples/rabbitmq.mapping.yaml";
    mapping_ = inputs::parse_mapping(read_file(path), path, *table_);
    for (const inputs::InputFormat& f : inputs::input_formats()) {
      if (f.name == "rabbitmq") parser_ = f.make_parser(*table_, &mapping_.mapping);
    }
    ASSERT_TRUE(parser_);
    init_amqp_pool(&pool_, 4096);
  }
  void TearDown() override { empty_amqp_pool(&pool_); }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }

  amqp_field_value_t text(const std::string& s) {
    amqp_field_value_t v;
    v.kind = AMQP_FIELD_KIND_UTF8;
    v.value.bytes = keep(s);
    return v;
  }
  amqp_bytes_t keep(const std::string& s) {
    strings_.push_back(std::make_unique<std::string>(s));
    amqp_bytes_t b;
    b.bytes = strings_.back()->data();
    b.len = strings_.back()->size();
    return b;
  }
  amqp_table_entry_t entry(const std::string& key, amqp_field_value_t value) {
    amqp_table_entry_t e;
    e.key = keep(key);
    e.value = value;
    return e;
  }
  // A dead letter as the broker delivers it from dlq: x-death names `queue`.
  void letter(const std::string& error_class, const std::string& body,
              const std::string& message_id = "m-1", const std::string& queue = "payment.capture") {
    death_.clear();
    death_.push_back(entry("count", [] {
      amqp_field_value_t v;
      v.kind = AMQP_FIELD_KIND_I64;
      v.value.i64 = 1;
      return v;
    }()));
    death_.push_back(entry("queue", text(queue)));
    death_.push_back(entry("reason", text("rejected")));
    death_value_.kind = AMQP_FIELD_KIND_TABLE;
    death_value_.value.table.num_entries = static_cast<int>(death_.size());
    death_value_.value.table.entries = death_.data();
    deaths_ = {death_value_};
    headers_.clear();
    amqp_field_value_t array;
    array.kind = AMQP_FIELD_KIND_ARRAY;
    array.value.array.num_entries = 1;
    array.value.array.entries = deaths_.data();
    headers_.push_back(entry("x-death", array));
    headers_.push_back(entry("x-first-death-queue", text(queue)));
    headers_.push_back(entry("x-first-death-reason", text("rejected")));
    headers_.push_back(entry("x-exception-class", text(error_class)));
    envelope_ = amqp_envelope_t{};
    amqp_basic_properties_t& props = envelope_.message.properties;
    props._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
    props.headers.num_entries = static_cast<int>(headers_.size());
    props.headers.entries = headers_.data();
    props.message_id = keep(message_id);
    envelope_.routing_key = keep("dlq");
    envelope_.exchange = keep("");
    envelope_.message.body = keep(body);
  }
  void refresh_headers() {
    envelope_.message.properties.headers.num_entries = static_cast<int>(headers_.size());
    envelope_.message.properties.headers.entries = headers_.data();
  }
  redrive::DeadLetter dead_letter(rmq::EnvelopeRecord* record, const rmq::Limits& limits = {}) {
    rmq::envelope_to_record(envelope_, limits, record);
    redrive::DeadLetter d;
    d.record = std::string_view(record->record).substr(0, record->record_size);
    d.problem = record->problem;
    d.message_id = record->message_id;
    d.replay_target_known = !record->died_in.empty();
    d.redelivered = envelope_.redelivered != 0;
    d.replays = record->replays;
    d.body_digest = record->body_digest;
    return d;
  }
  void add_header(const std::string& name, amqp_field_value_t value) {
    headers_.push_back(entry(name, value));
    refresh_headers();
  }
  static amqp_field_value_t long_value(int64_t n) {
    amqp_field_value_t v;
    v.kind = AMQP_FIELD_KIND_I64;
    v.value.i64 = n;
    return v;
  }
  redrive::Redrive::Options apply_options() const {
    redrive::Redrive::Options options;
    options.actions = redrive::ActionMap::defaults(*table_);
    options.dry_run = false;
    options.ledger_url = p("ledger.db");
    options.audit_path = p("audit.log");
    options.operator_name = "ops";
    options.source = "test";
    return options;
  }

  std::unique_ptr<Table> table_;
  inputs::LoadedMapping mapping_;
  std::unique_ptr<inputs::RecordParser> parser_;
  amqp_pool_t pool_;
  std::vector<std::unique_ptr<std::string>> strings_;
  std::vector<amqp_table_entry_t> death_, headers_;
  amqp_field_value_t death_value_{};
  std::vector<amqp_field_value_t> deaths_;
  amqp_envelope_t envelope_{};
};

const char* const kTimeout = "java.net.SocketTimeoutException";
const char* const kBody = "{\"idempotency_key\":\"cap_a101\",\"committed\":false}";

TEST_F(GateRedrive, AnEnvelopeIsTheManagementApiRecord) {
  letter(kTimeout, kBody);
  rmq::EnvelopeRecord record;
  rmq::envelope_to_record(envelope_, {}, &record);
  ASSERT_EQ(record.problem, "");
  EXPECT_EQ(record.died_in, "payment.capture");
  EXPECT_EQ(record.replays, 0);
  ASSERT_EQ(record.message_id, "m-1");
  const json j = json::parse(record.record.substr(0, record.record_size));
  EXPECT_EQ(j["routing_key"], "dlq");
  EXPECT_EQ(j["payload"], kBody);
  EXPECT_EQ(j["payload_encoding"], "string");
  EXPECT_EQ(j["properties"]["message_id"], "m-1");
  EXPECT_EQ(j["properties"]["headers"]["x-death"][0]["queue"], "payment.capture");
  EXPECT_EQ(j["properties"]["headers"]["x-death"][0]["count"], 1);
  // A binary body goes as base64, and reads back as the same bytes.
  envelope_.message.body = keep(std::string("\x00\xff\x01", 3));
  rmq::envelope_to_record(envelope_, {}, &record);
  const json b = json::parse(record.record.substr(0, record.record_size));
  EXPECT_EQ(b["payload_encoding"], "base64");
  EXPECT_EQ(b["payload"], "AP8B");
}

TEST_F(GateRedrive, PoisonEnvelopesAreProblemsNotRecords) {
  rmq::EnvelopeRecord record;
  letter(kTimeout, kBody);
  headers_.push_back(entry("x-bad", text("\xff\xfe")));
  refresh_headers();
  rmq::envelope_to_record(envelope_, {}, &record);
  EXPECT_NE(record.problem.find("not valid UTF-8"), std::string::npos) << record.problem;

  letter(kTimeout, kBody);
  headers_.push_back(entry("x-exception-class", text("twice")));
  refresh_headers();
  rmq::envelope_to_record(envelope_, {}, &record);
  EXPECT_NE(record.problem.find("twice"), std::string::npos) << record.problem;

  // Arrays nested 40 deep: over the 32-level bound, however the broker delivered them.
  letter(kTimeout, kBody);
  std::vector<amqp_field_value_t> levels(41);
  levels[0] = text("x");
  for (size_t i = 1; i < levels.size(); ++i) {
    levels[i].kind = AMQP_FIELD_KIND_ARRAY;
    levels[i].value.array.num_entries = 1;
    levels[i].value.array.entries = &levels[i - 1];
  }
  headers_.push_back(entry("x-deep", levels.back()));
  refresh_headers();
  rmq::envelope_to_record(envelope_, {}, &record);
  EXPECT_NE(record.problem.find("nest deeper than 32"), std::string::npos) << record.problem;

  letter(kTimeout, kBody);
  rmq::Limits small;
  small.max_body = 10;
  rmq::envelope_to_record(envelope_, small, &record);
  EXPECT_NE(record.problem.find("--max-body"), std::string::npos) << record.problem;

  // A poison letter is held with the problem as its reason: never a replay.
  redrive::Redrive::Options dry;
  dry.actions = redrive::ActionMap::defaults(*table_);
  redrive::Redrive redrive(dry);
  ASSERT_EQ(redrive.open(), "");
  const redrive::LetterStep plan = redrive.step(*table_, *parser_, dead_letter(&record, small));
  EXPECT_EQ(plan.action, redrive::Action::kHold);
  EXPECT_EQ(plan.rule, "invalid");
  EXPECT_NE(plan.reason.find("--max-body"), std::string::npos);
}

// A header name twice in any table of the envelope, at any depth (an x-death entry with two
// counts, two x-replay headers), makes the letter a problem: held alone, never read as either
// value (issue 35, item 5; the dump readers refuse the same in JSON, inputs/json_keys.h).
TEST_F(GateRedrive, DuplicateHeaderNamesAtAnyDepthAreProblems) {
  rmq::EnvelopeRecord record;
  letter(kTimeout, kBody);
  amqp_field_value_t nine;
  nine.kind = AMQP_FIELD_KIND_I64;
  nine.value.i64 = 9;
  death_.push_back(entry("count", nine));
  death_value_.value.table.num_entries = static_cast<int>(death_.size());
  death_value_.value.table.entries = death_.data();
  deaths_ = {death_value_};
  headers_[0].value.value.array.entries = deaths_.data();
  rmq::envelope_to_record(envelope_, {}, &record);
  EXPECT_EQ(record.problem, "header '/x-death/0/count' is in its table twice");

  letter(kTimeout, kBody);
  amqp_field_value_t zero = nine, three = nine;
  zero.value.i64 = 0;
  three.value.i64 = 3;
  headers_.push_back(entry("x-replay", zero));
  headers_.push_back(entry("x-replay", three));
  refresh_headers();
  rmq::envelope_to_record(envelope_, {}, &record);
  EXPECT_EQ(record.problem, "header '/x-replay' is in its table twice");
  redrive::Redrive::Options dry;
  dry.actions = redrive::ActionMap::defaults(*table_);
  redrive::Redrive redrive(dry);
  ASSERT_EQ(redrive.open(), "");
  const redrive::LetterStep plan = redrive.step(*table_, *parser_, dead_letter(&record));
  EXPECT_EQ(plan.action, redrive::Action::kHold);
  EXPECT_EQ(plan.rule, "invalid");
}

TEST_F(GateRedrive, RepublishPropertiesSetTheMarkerAndKeepTheRest) {
  letter(kTimeout, kBody);
  amqp_field_value_t old;
  old.kind = AMQP_FIELD_KIND_I64;
  old.value.i64 = 4;
  headers_.push_back(entry("x-replay", old));
  refresh_headers();
  rmq::EnvelopeRecord record;
  rmq::envelope_to_record(envelope_, {}, &record);
  EXPECT_EQ(record.replays, 4);
  const size_t kept = headers_.size();
  // What a quorum dead-letter queue wrote on redelivery describes that queue, not the message.
  add_header("x-delivery-count", long_value(2));
  std::vector<amqp_table_entry_t> storage;
  // The result points into the headers it was given: they must outlive it.
  const std::vector<rmq::HeaderValue> set = {{"x-replay", true, 5, ""}};
  const amqp_basic_properties_t p = rmq::republish_properties(envelope_, set, &storage);
  EXPECT_EQ(p.delivery_mode, AMQP_DELIVERY_PERSISTENT);
  EXPECT_EQ(std::string(static_cast<const char*>(p.message_id.bytes), p.message_id.len), "m-1");
  int replay_headers = 0;
  for (int i = 0; i < p.headers.num_entries; ++i) {
    const std::string key(static_cast<const char*>(p.headers.entries[i].key.bytes),
                          p.headers.entries[i].key.len);
    if (key == "x-replay") {
      ++replay_headers;
      EXPECT_EQ(p.headers.entries[i].value.value.i64, 5);
    }
  }
  EXPECT_EQ(replay_headers, 1);
  EXPECT_EQ(p.headers.num_entries, static_cast<int>(kept)) << "x-delivery-count travelled on";
  for (int i = 0; i < p.headers.num_entries; ++i) {
    const std::string key(static_cast<const char*>(p.headers.entries[i].key.bytes),
                          p.headers.entries[i].key.len);
    EXPECT_NE(key, "x-delivery-count");
  }
}

TEST_F(GateRedrive, ReplayingIntoTheDeadLetterQueueItselfIsAUsageError) {
  // Refused before any connection (the port is closed): every replay would come straight back.
  const CliResult r =
      run({"gate", "rabbitmq", "--table", p("gate.rgt"), "--mapping",
           kSourceDir + "/examples/rabbitmq.mapping.yaml", "--amqp", "amqp://127.0.0.1:1/",
           "--queue", "dlq", "--replay-routing-key", "dlq", "--all"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is the dead-letter queue itself"), std::string::npos) << r.err;
}

TEST_F(GateRedrive, TheBodyDigestIsSha256OfTheBody) {
  letter(kTimeout, "abc");
  rmq::EnvelopeRecord record;
  rmq::envelope_to_record(envelope_, {}, &record);
  // FIPS 180-2's test vector for "abc".
  EXPECT_EQ(record.body_digest,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  rmq::Limits small;
  small.max_body = 2;
  rmq::envelope_to_record(envelope_, small, &record);
  EXPECT_EQ(record.body_digest, "") << "a body the gate does not read has no digest";
}

TEST_F(GateRedrive, ActionsByVerbAndOverrides) {
  redrive::ActionMap map = redrive::ActionMap::defaults(*table_);
  EXPECT_EQ(map.of(table_->verb_index("replay_once")), redrive::Action::kRepublish);
  EXPECT_EQ(map.of(table_->verb_index("never")), redrive::Action::kPark);
  EXPECT_EQ(map.of(table_->verb_index("hold")), redrive::Action::kHold);
  EXPECT_EQ(map.missing(*table_), "");
  EXPECT_EQ(map.set(*table_, "never=hold"), "");
  EXPECT_EQ(map.of(table_->verb_index("never")), redrive::Action::kHold);
  EXPECT_NE(map.set(*table_, "never=republish").find("only a create verb"), std::string::npos);
  EXPECT_NE(map.set(*table_, "nevr=hold").find("did you mean 'never'"), std::string::npos);
  EXPECT_NE(map.set(*table_, "never=drop").find("unknown action"), std::string::npos);
  EXPECT_NE(map.set(*table_, "never").find("VERB=ACTION"), std::string::npos);
}

TEST_F(GateRedrive, TheLedgerSaysWhetherAReplayHappened) {
  redrive::Redrive redrive(apply_options());
  ASSERT_EQ(redrive.open(), "");
  rmq::EnvelopeRecord record;
  letter(kTimeout, kBody, "m-1");
  redrive::DeadLetter d = dead_letter(&record);

  // A filter that passes the letter over claims nothing.
  redrive::LetterStep plan = redrive.step(*table_, *parser_, d, [](const Input*) { return false; });
  EXPECT_EQ(plan.kind, redrive::LetterStep::Kind::kSkip);
  EXPECT_TRUE(redrive.ledger()->lookup({"cap_a101"})->at(0) == std::nullopt);

  plan = redrive.step(*table_, *parser_, d);
  ASSERT_EQ(plan.kind, redrive::LetterStep::Kind::kAct);
  EXPECT_EQ(plan.action, redrive::Action::kRepublish);
  EXPECT_EQ(plan.generation, 1);
  EXPECT_EQ(plan.copy_replay, 1);
  // The claim records the copy: the x-replay it is published with and the body's digest.
  const std::optional<ledger::Record> claimed = redrive.ledger()->lookup({"cap_a101"})->at(0);
  ASSERT_TRUE(claimed);
  EXPECT_EQ(claimed->copy_replay, 1);
  EXPECT_EQ(claimed->body_digest, record.body_digest);
  EXPECT_EQ(claimed->body_digest.size(), 7u + 64u);
  ASSERT_EQ(redrive.record_decision(*table_, plan, d, 1), "");
  // Redelivered before its confirm was recorded: the outcome is unknown, so it is held.
  redrive::LetterStep again = redrive.step(*table_, *parser_, d);
  EXPECT_EQ(again.action, redrive::Action::kHold);
  EXPECT_EQ(again.rule, "ledger:outcome_unknown");
  EXPECT_EQ(again.verb, table_->default_verb());
  // Once confirmed, a redelivery (the broker's flag, the same body, x-replay below the copy's) is
  // acked without a second publish.
  ASSERT_EQ(redrive.record_outcome(plan, true, "published, confirmed"), "");
  EXPECT_EQ(redrive.ledger()->lookup({"cap_a101"})->at(0)->state, ledger::State::kConfirmed);
  again = redrive.step(*table_, *parser_, d);
  EXPECT_EQ(again.rule, "gate:ambiguous_redelivery") << "not redelivered: a new delivery";
  EXPECT_EQ(again.action, redrive::Action::kHold);
  EXPECT_NE(again.reason.find("did not mark it redelivered"), std::string::npos) << again.reason;
  envelope_.redelivered = 1;
  d = dead_letter(&record);
  again = redrive.step(*table_, *parser_, d);
  EXPECT_EQ(again.kind, redrive::LetterStep::Kind::kAckOnly) << again.rule << ": " << again.reason;
  // Another message with the same key is held: the key was replayed.
  letter(kTimeout, kBody, "m-2");
  d = dead_letter(&record);
  again = redrive.step(*table_, *parser_, d);
  EXPECT_EQ(again.rule, "ledger:already_replayed");
  EXPECT_NE(again.reason.find("message m-1"), std::string::npos) << again.reason;
  // A target the broker client refuses is held before any claim.
  letter(kTimeout, "{\"idempotency_key\":\"cap_elsewhere\",\"committed\":false}", "m-4");
  d = dead_letter(&record);
  d.refuse_target = [](const Table&, const Input&) {
    return redrive::DeadLetter::Refusal{"gate:target_mismatch", "not the decided queue"};
  };
  again = redrive.step(*table_, *parser_, d);
  EXPECT_EQ(again.rule, "gate:target_mismatch");
  EXPECT_EQ(again.action, redrive::Action::kHold);
  EXPECT_TRUE(redrive.ledger()->lookup({"cap_elsewhere"})->at(0) == std::nullopt);
  // No x-death queue: no target, held before any claim.
  letter(kTimeout, "{\"idempotency_key\":\"cap_new\",\"committed\":false}", "m-3");
  d = dead_letter(&record);
  d.replay_target_known = false;
  again = redrive.step(*table_, *parser_, d);
  EXPECT_EQ(again.rule, "gate:no_target");
  EXPECT_TRUE(redrive.ledger()->lookup({"cap_new"})->at(0) == std::nullopt);
  // The audit log verifies and holds the decision and its result.
  const CliResult verified = run({"audit", "verify", p("audit.log")});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_EQ(lines_of(read_file(p("audit.log"))).size(), 2u);
}

// Issue 35 item 1, issue 42 item 2: after a confirmed replay, only the same death delivered again
// is acked without publishing. The copy dying again, another body under the same message id and
// key, an unreadable x-replay and a claim that does not record its copy are never acked away.
TEST_F(GateRedrive, OnlyTheSameDeathDeliveredAgainIsAckedWithoutPublishing) {
  // A mapping that does not read x-replay (the policy's replays input comes from another header):
  // the policy's own already_replayed guard never sees the marker, the gate still does.
  const std::string path = kSourceDir + "/examples/rabbitmq.mapping.yaml";
  std::string source = read_file(path);
  // Every input that reads it (the example maps x-replay to attempts and to replays).
  ASSERT_NE(source.find("header: x-replay"), std::string::npos);
  for (size_t at = source.find("header: x-replay"); at != std::string::npos;
       at = source.find("header: x-replay")) {
    source.replace(at, 16, "header: x-retries");
  }
  const inputs::LoadedMapping unmapped = inputs::parse_mapping(source, path, *table_);
  ASSERT_TRUE(unmapped.diagnostics.empty());
  std::unique_ptr<inputs::RecordParser> parser;
  for (const inputs::InputFormat& f : inputs::input_formats()) {
    if (f.name == "rabbitmq") parser = f.make_parser(*table_, &unmapped.mapping);
  }
  ASSERT_TRUE(parser);
  parser_ = std::move(parser);
  redrive::Redrive redrive(apply_options());
  ASSERT_EQ(redrive.open(), "");
  rmq::EnvelopeRecord record;
  letter(kTimeout, kBody, "m-0");
  redrive::DeadLetter d = dead_letter(&record);
  const redrive::LetterStep plan = redrive.step(*table_, *parser_, d);
  ASSERT_EQ(plan.action, redrive::Action::kRepublish);
  ASSERT_EQ(redrive.record_decision(*table_, plan, d, 1), "");
  ASSERT_EQ(redrive.record_outcome(plan, true, "published, confirmed"), "");
  const auto judged = [&](const std::function<void()>& change) {
    letter(kTimeout, kBody, "m-0");
    envelope_.redelivered = 1;
    change();
    d = dead_letter(&record);
    return redrive.step(*table_, *parser_, d);
  };
  // The same death, redelivered after a crash: acked only.
  redrive::LetterStep again = judged([] {});
  EXPECT_EQ(again.kind, redrive::LetterStep::Kind::kAckOnly) << again.rule << ": " << again.reason;
  // The copy (x-replay 1, as published) died again: a new letter whose key is used up. Even
  // redelivered (a dry run saw it first), and with a mapping that does not read x-replay.
  for (int64_t marker : {1, 2}) {
    again = judged([&] { add_header("x-replay", long_value(marker)); });
    EXPECT_EQ(again.kind, redrive::LetterStep::Kind::kAct);
    EXPECT_EQ(again.action, redrive::Action::kHold);
    EXPECT_EQ(again.rule, "ledger:already_replayed") << marker;
    EXPECT_NE(again.reason.find("the replayed copy died again"), std::string::npos) << again.reason;
  }
  // Another body under the same message id and key.
  again = judged([&] {
    envelope_.message.body = keep("{\"idempotency_key\":\"cap_a101\",\"committed\":false,\"x\":1}");
  });
  EXPECT_EQ(again.rule, "gate:ambiguous_redelivery");
  EXPECT_EQ(again.action, redrive::Action::kHold);
  EXPECT_NE(again.reason.find("body differs"), std::string::npos) << again.reason;
  // An x-replay that cannot be read: the mapping may read it as anything, the gate does not.
  again = judged([&] { add_header("x-replay", text("once")); });
  EXPECT_EQ(again.rule, "gate:ambiguous_redelivery");
  EXPECT_NE(again.reason.find("cannot be read"), std::string::npos) << again.reason;
  // A confirmed claim that does not record its copy (an older build's, a rebuilt ledger's).
  ledger::Claim old;
  old.key = "cap_old";
  old.message_id = "m-old";
  old.worker = "an older gate";
  const auto won = redrive.ledger()->claim_batch({old});
  ASSERT_TRUE(won.ok());
  ASSERT_TRUE(redrive.ledger()->mark("cap_old", 1, ledger::State::kConfirmed).ok());
  again = judged([&] {
    envelope_.message.body = keep("{\"idempotency_key\":\"cap_old\",\"committed\":false}");
    envelope_.message.properties.message_id = keep("m-old");
  });
  EXPECT_EQ(again.rule, "gate:ambiguous_redelivery");
  EXPECT_NE(again.reason.find("does not record which copy"), std::string::npos) << again.reason;
  // A dry run judges the same way (it looks the claim up).
  redrive::Redrive::Options dry = apply_options();
  dry.dry_run = true;
  dry.audit_path.clear();
  redrive::Redrive looking(dry);
  ASSERT_EQ(looking.open(), "");
  letter(kTimeout, kBody, "m-0");
  add_header("x-replay", long_value(1));
  d = dead_letter(&record);
  EXPECT_EQ(looking.step(*table_, *parser_, d).rule, "ledger:already_replayed");
}

// A key the ledger cannot hold (a NUL byte, more than 4096 bytes) is held alone as
// ledger:invalid_key before any claim: the claim would fail, stop the run, and stop every rerun at
// that letter. The letter after it is claimed as usual (issue 35).
TEST_F(GateRedrive, AnInvalidKeyIsHeldAloneAndTheNextLetterGoesOn) {
  for (const bool dry_run : {false, true}) {
    redrive::Redrive::Options options;
    options.actions = redrive::ActionMap::defaults(*table_);
    options.dry_run = dry_run;
    options.ledger_url = p(dry_run ? "dry.db" : "ledger.db");
    options.audit_path = p("audit.log");
    options.operator_name = "ops";
    options.source = "test";
    redrive::Redrive redrive(options);
    ASSERT_EQ(redrive.open(), "");
    rmq::EnvelopeRecord record;
    for (const std::string& key : {std::string("a\\u0000b"), std::string(4097, 'k')}) {
      letter(kTimeout, "{\"idempotency_key\":\"" + key + "\",\"committed\":false}", "m-bad");
      const redrive::DeadLetter d = dead_letter(&record);
      const redrive::LetterStep plan = redrive.step(*table_, *parser_, d);
      EXPECT_EQ(plan.kind, redrive::LetterStep::Kind::kAct) << plan.error;
      EXPECT_EQ(plan.action, redrive::Action::kHold);
      EXPECT_EQ(plan.rule, "ledger:invalid_key");
      EXPECT_EQ(plan.verb, table_->default_verb());
      EXPECT_NE(plan.reason.find(key.size() > 10 ? "is longer than 4096 bytes (4097)"
                                                 : "is not valid UTF-8 or contains a NUL byte"),
                std::string::npos)
          << plan.reason;
    }
    letter(kTimeout, kBody, "m-good");
    const redrive::DeadLetter d = dead_letter(&record);
    const redrive::LetterStep plan = redrive.step(*table_, *parser_, d);
    ASSERT_EQ(plan.kind, redrive::LetterStep::Kind::kAct) << plan.error;
    EXPECT_EQ(plan.action, redrive::Action::kRepublish);
    EXPECT_EQ(plan.rule, "known_failures:payment.capture/timeout");
    EXPECT_EQ(plan.generation, dry_run ? 0 : 1);
  }
}

}  // namespace
}  // namespace replaygate::testing
