// The record formats table and the --input-format / --format / --mapping checks (see
// input_formats.h).
#include "inputs/formats.h"

#include "common/diagnostic.h"
#include "common/escape.h"
#include "inputs/bullmq.h"
#include "inputs/kafka.h"
#include "inputs/letters.h"
#include "inputs/pubsub.h"
#include "inputs/rabbitmq.h"
#include "inputs/servicebus.h"
#include "inputs/sidekiq.h"
#include "inputs/sqs.h"

namespace replaygate::inputs {
namespace {

std::unique_ptr<RecordParser> make_letters(const Table& table, const Mapping* /*mapping*/) {
  return std::make_unique<LetterParser>(table);
}
std::unique_ptr<RecordParser> make_kafka(const Table& table, const Mapping* mapping) {
  return std::make_unique<KafkaParser>(table, *mapping);
}
std::unique_ptr<RecordParser> make_pubsub(const Table& table, const Mapping* mapping) {
  return make_mapped_parser(table, *mapping, make_pubsub_reader());
}
std::unique_ptr<RecordParser> make_servicebus(const Table& table, const Mapping* mapping) {
  return make_mapped_parser(table, *mapping, make_servicebus_reader());
}
std::unique_ptr<RecordParser> make_sidekiq(const Table& table, const Mapping* mapping) {
  return make_mapped_parser(table, *mapping, make_sidekiq_reader());
}
std::unique_ptr<RecordParser> make_bullmq(const Table& table, const Mapping* mapping) {
  return make_mapped_parser(table, *mapping, make_bullmq_reader());
}
std::unique_ptr<RecordParser> make_sqs(const Table& table, const Mapping* mapping) {
  return make_mapped_parser(table, *mapping, make_sqs_reader());
}
std::unique_ptr<RecordParser> make_rabbitmq(const Table& table, const Mapping* mapping) {
  return make_mapped_parser(table, *mapping, make_rabbitmq_reader());
}

}  // namespace

const std::vector<InputFormat>& input_formats() {
  // The one list of format names; a new format is one line (docs/cli.md "Formats").
  static const std::vector<InputFormat> formats = {
      {"letters", "", "JSON objects keyed by policy inputs", make_letters, false, "", 0},
      {"spring-kafka", "kcat-json",
       "Spring Kafka DLT and retry-topic records as kcat -C -J prints them, read through --mapping",
       make_kafka, false, "", 1},
      {"kafka", "kcat-json", "another name for spring-kafka", make_kafka, false, "", 1},
      {"kafka-connect", "connect-kcat-json",
       "Kafka Connect dead-letter topic records (__connect.errors.* headers) as kcat -C -J prints "
       "them, read through --mapping",
       make_kafka, false, "", 1},
      {"rabbitmq", "rabbitmq-management-json",
       "RabbitMQ management API /api/queues/VHOST/QUEUE/get responses (a JSON array of messages), "
       "read through --mapping",
       make_rabbitmq, true, "", 1000},
      {"sqs", "sqs-json",
       "aws sqs receive-message output ({\"Messages\": [...]}), read through --mapping", make_sqs,
       true, "Messages", 1},
      {"pubsub", "pubsub-json",
       "Google Pub/Sub projects.subscriptions.pull responses ({\"receivedMessages\": [...]}), "
       "read through --mapping",
       make_pubsub, true, "receivedMessages", 0},
      {"servicebus", "servicebus-json",
       "Azure Service Bus dead-letter messages, one JSON object per line, read through --mapping",
       make_servicebus, false, "", 0},
      {"sidekiq", "sidekiq-json",
       "Sidekiq Dead or Retry set job hashes, one per line (redis-cli --raw ZRANGE dead 0 -1), "
       "read through --mapping",
       make_sidekiq, false, "", 1},
      {"bullmq", "bullmq-json",
       "BullMQ failed job hashes with their id and queue, one JSON object per line, read through "
       "--mapping",
       make_bullmq, false, "", 1},
  };
  return formats;
}

bool is_mapping_format(std::string_view format) {
  for (const InputFormat& f : input_formats()) {
    if (!f.mapping_format.empty() && f.mapping_format == format) return true;
  }
  return false;
}

std::string mapping_format_names() {
  std::vector<std::string_view> names;
  for (const InputFormat& f : input_formats()) {
    if (f.mapping_format.empty()) continue;
    bool seen = false;
    for (std::string_view n : names) seen = seen || n == f.mapping_format;
    if (!seen) names.push_back(f.mapping_format);
  }
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::string input_format_names() {
  const std::vector<InputFormat>& formats = input_formats();
  std::string out;
  for (size_t i = 0; i < formats.size(); ++i) {
    if (i > 0) out += i + 1 == formats.size() ? " or " : ", ";
    out += formats[i].name;
  }
  return out;
}

const InputFormat* choose_input_format(const InputFormatOptions& o, std::string* error) {
  const bool given = o.input_format_set || o.alias_set;
  // The option as the user spelled it, for the messages.
  const std::string option = o.input_format_set ? "--input-format" : "--format";
  const std::string name = o.input_format_set ? o.input_format : o.alias;
  if (o.input_format_set && o.alias_set && o.input_format != o.alias) {
    *error = "--format " + escape_control(o.alias) + " and --input-format " +
             escape_control(o.input_format) +
             " disagree: --format is another name for --input-format; give one of them";
    return nullptr;
  }
  const InputFormat* format = &input_formats().front();
  if (given) {
    format = nullptr;
    std::vector<std::string> names;
    for (const InputFormat& f : input_formats()) {
      if (f.name == name) format = &f;
      names.emplace_back(f.name);
    }
    if (format == nullptr) {
      *error = option + " must be " + input_format_names() + ", not '" + escape_control(name) + "'";
      const std::string suggestion = closest_match(name, names);
      if (!suggestion.empty()) *error += "; did you mean '" + suggestion + "'?";
      return nullptr;
    }
  }
  if (!format->mapping_format.empty() && o.mapping.empty()) {
    *error = option + " " + std::string(format->name) +
             " needs --mapping MAPPING.yaml (which header or payload field feeds each policy "
             "input)";
    return nullptr;
  }
  if (format->mapping_format.empty() && !o.mapping.empty()) {
    std::string takers;
    for (const InputFormat& f : input_formats()) {
      if (f.mapping_format.empty()) continue;
      takers += (takers.empty() ? "--input-format " : ", ") + std::string(f.name);
    }
    *error = "--mapping applies only to a format that reads broker records (" + takers +
             "), not to " + std::string(format->name);
    return nullptr;
  }
  return format;
}

std::string mapping_format_mismatch(const InputFormat& format, const std::string& mapping_path,
                                    const Mapping& mapping) {
  if (mapping.format == format.mapping_format) return "";
  return escape_control(mapping_path) + " maps " + escape_control(mapping.format) +
         " records, but --input-format " + std::string(format.name) + " reads " +
         std::string(format.mapping_format) +
         " records; give a mapping with format: " + std::string(format.mapping_format);
}

}  // namespace replaygate::inputs
