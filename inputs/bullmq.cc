// BullMQ failed job hashes -> BrokerRecord (see bullmq.h).
#include "inputs/bullmq.h"

#include <simdjson.h>

#include <charconv>
#include <limits>
#include <string>

#include "inputs/json_record.h"

namespace replaygate::inputs {
namespace {

namespace dom = simdjson::dom;

constexpr JsonRecordOptions kRecord{.what = "a BullMQ job",
                                    .blank = "blank line",
                                    .blank_space = " \t\r",
                                    .byte_order_mark = true,
                                    .shape_offsets = true};

// A decimal integer >= 0 as BullMQ writes counters and times into its hash, else nullopt.
std::optional<int64_t> counter(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

class BullmqReader : public BrokerRecordReader {
 public:
  bool read(std::string_view text, BrokerRecord* r, std::string* problem,
            size_t* problem_offset) override {
    r->clear();
    const uint64_t position = position_++;
    dom::object job;
    if (!read_json_object(text, parser_, kRecord, &job, problem, problem_offset)) return false;
    r->offset = static_cast<int64_t>(position);
    bool has_id = false, has_queue = false, has_data = false;
    for (const dom::key_value_pair field : job) {
      std::string_view value;
      if (field.value.get_string().get(value)) {
        *problem = "field '" + std::string(field.key) +
                   "' is not a string (a BullMQ job hash holds strings only)";
        return false;
      }
      if (field.key == "id") {
        r->key = value;
        r->key_null = false;
        has_id = true;
      } else if (field.key == "queue") {
        r->topic = value;
        has_queue = true;
      } else if (field.key == "data") {
        r->payload = value;
        r->payload_null = false;
        has_data = true;
      } else {
        r->headers.emplace_back(field.key, value);
        if (field.key == "atm") {
          r->delivery_count = counter(value);
          if (!r->delivery_count || *r->delivery_count == std::numeric_limits<int64_t>::max()) {
            r->delivery_count.reset();
            r->delivery_count_problem = "atm is not an integer >= 0";
          }
        } else if (field.key == "finishedOn") {
          if (const std::optional<int64_t> ms = counter(value)) {
            r->timestamp = *ms;
            r->has_timestamp = true;
          }
        }
      }
    }
    for (const auto& [present, name] :
         {std::pair{has_id, "id"}, std::pair{has_queue, "queue"}, std::pair{has_data, "data"}}) {
      if (!present) {
        *problem = std::string("a BullMQ job needs a string '") + name + "'";
        return false;
      }
    }
    return true;
  }

 private:
  dom::parser parser_{kMaxRecordBytes + 64};
  uint64_t position_ = 0;
};

}  // namespace

std::unique_ptr<BrokerRecordReader> make_bullmq_reader() {
  return std::make_unique<BullmqReader>();
}

}  // namespace replaygate::inputs
