// libFuzzer target for what the live RabbitMQ gate receives (redrive/rabbitmq/envelope_record.h,
// redrive/redrive.h): any bytes as one AMQP delivery - a flags byte (redelivered, message id,
// timestamp), a routing key, a header table in AMQP wire encoding (decoded by librabbitmq's own
// amqp_decode_table, as a delivery's properties are) and the body - become the gate's record or a
// named problem, are decided by the shipped policy through examples/rabbitmq.mapping.yaml (a dry
// run's plan, no ledger), and the headers the gate would republish with encode again. Never a
// crash, a hang, a leak, or a republish of a letter the policy did not decide to replay.
#include <amqp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "redrive/rabbitmq/envelope_record.h"
#include "redrive/redrive.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace rmq = replaygate::redrive::rabbitmq;

struct Fixture {
  replaygate::fuzz::PolicyFixture policy;
  replaygate::inputs::LoadedMapping mapping;
  std::unique_ptr<replaygate::inputs::RecordParser> parser;
  std::unique_ptr<replaygate::redrive::Redrive> redrive;

  Fixture() {
    const replaygate::Table& table = *policy.table;
    const std::string path = "examples/rabbitmq.mapping.yaml";
    mapping = replaygate::inputs::parse_mapping(replaygate::fuzz::source_file(path), path, table);
    if (replaygate::has_errors(mapping.diagnostics)) __builtin_trap();
    for (const replaygate::inputs::InputFormat& f : replaygate::inputs::input_formats()) {
      if (f.name == "rabbitmq") parser = f.make_parser(table, &mapping.mapping);
    }
    if (!parser) __builtin_trap();
    replaygate::redrive::Redrive::Options options;
    options.actions = replaygate::redrive::ActionMap::defaults(table);
    options.dry_run = true;
    redrive = std::make_unique<replaygate::redrive::Redrive>(std::move(options));
    if (!redrive->open().empty()) __builtin_trap();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture f;
  const replaygate::Table& table = *f.policy.table;
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  const size_t key_size = std::min<size_t>(data[1], size - 2);
  size_t at = 2 + key_size;
  std::string routing_key(reinterpret_cast<const char*>(data + 2), key_size);
  std::string message_id = "m-" + std::to_string(size);

  amqp_envelope_t envelope{};
  amqp_pool_t pool;
  init_amqp_pool(&pool, 4096);
  amqp_basic_properties_t& p = envelope.message.properties;
  p._flags = 0;
  if (at < size) {
    amqp_bytes_t encoded;
    encoded.bytes = const_cast<uint8_t*>(data);
    encoded.len = size;
    size_t offset = at;
    if (amqp_decode_table(encoded, &pool, &p.headers, &offset) == AMQP_STATUS_OK) {
      p._flags |= AMQP_BASIC_HEADERS_FLAG;
      at = offset;
    }
  }
  if (flags & 2) {
    p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
    p.message_id = amqp_cstring_bytes(message_id.c_str());
  }
  if (flags & 4) {
    p._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
    p.timestamp = 1764403200;
  }
  envelope.redelivered = flags & 1;
  envelope.routing_key.bytes = routing_key.data();
  envelope.routing_key.len = routing_key.size();
  envelope.exchange = amqp_cstring_bytes("");
  envelope.message.body.bytes = const_cast<uint8_t*>(data + at);
  envelope.message.body.len = size - at;

  rmq::Limits limits;
  limits.max_body = 1024;  // small, so fuzzing reaches the bound
  rmq::EnvelopeRecord record;
  rmq::envelope_to_record(envelope, limits, &record);
  if (record.problem.empty() && record.record.size() < record.record_size) __builtin_trap();

  replaygate::redrive::DeadLetter letter;
  letter.record = std::string_view(record.record).substr(0, record.record_size);
  letter.problem = record.problem;
  letter.message_id = record.message_id;
  letter.replay_target_known = !record.died_in.empty();
  const replaygate::redrive::LetterStep plan = f.redrive->step(table, *f.parser, letter);
  if (plan.verb >= table.verb_count()) __builtin_trap();
  if (plan.action == replaygate::redrive::Action::kRepublish) {
    // A republish only for a letter that was read and decided to a create verb, with a key and a
    // known target.
    if (!plan.readable || !record.problem.empty() || !plan.key || plan.key->empty() ||
        record.died_in.empty() ||
        table.verb_effect(plan.decision.verb) != replaygate::Effect::kCreate) {
      __builtin_trap();
    }
  }
  // The headers the gate would publish with encode (what a park or hold move sends).
  std::vector<rmq::HeaderValue> set = {{"x-replay", true, record.replays.value_or(0) + 1, ""},
                                       {"x-replaygate-rule", false, 0, plan.rule}};
  std::vector<amqp_table_entry_t> storage;
  amqp_basic_properties_t out = rmq::republish_properties(envelope, set, &storage);
  std::vector<uint8_t> buffer(size * 2 + 8192);
  amqp_bytes_t encoded;
  encoded.bytes = buffer.data();
  encoded.len = buffer.size();
  size_t offset = 0;
  (void)amqp_encode_table(encoded, &out.headers, &offset);
  empty_amqp_pool(&pool);
  return 0;
}
