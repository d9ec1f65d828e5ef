// Sidekiq job hashes -> BrokerRecord (see sidekiq.h).
#include "inputs/sidekiq.h"

#include <simdjson.h>

#include <cmath>
#include <limits>
#include <string>

#include "inputs/json_record.h"

namespace replaygate::inputs {
namespace {

namespace dom = simdjson::dom;

constexpr JsonRecordOptions kRecord{.what = "a Sidekiq job",
                                    .blank = "blank line",
                                    .blank_space = " \t\r",
                                    .byte_order_mark = true,
                                    .shape_offsets = true};

class SidekiqReader : public BrokerRecordReader {
 public:
  bool read(std::string_view text, BrokerRecord* r, std::string* problem,
            size_t* problem_offset) override {
    r->clear();
    const uint64_t position = position_++;
    dom::object job;
    if (!read_json_object(text, parser_, kRecord, &job, problem, problem_offset)) return false;
    r->offset = static_cast<int64_t>(position);
    r->payload = text;
    r->payload_null = false;
    for (const char* name : {"jid", "class", "queue"}) {
      std::string_view value;
      if (job[name].get_string().get(value)) {
        *problem = std::string("a Sidekiq job needs a string '") + name + "'";
        return false;
      }
      if (std::string_view(name) == "jid") {
        r->key = value;
        r->key_null = false;
      } else if (std::string_view(name) == "queue") {
        r->topic = value;
      }
    }
    dom::element retry_count;
    if (!job["retry_count"].get(retry_count)) {
      int64_t count = 0;
      if (retry_count.get_int64().get(count) || count < 0 ||
          count == std::numeric_limits<int64_t>::max()) {
        r->delivery_count_problem = "retry_count is not an integer >= 0";
      } else {
        r->delivery_count = count + 1;
      }
    }
    dom::element failed_at;
    if (!job["failed_at"].get(failed_at)) {
      int64_t ms = 0;
      double seconds = 0;
      if (!failed_at.get_int64().get(ms)) {  // Sidekiq 8: milliseconds
        r->timestamp = ms;
        r->has_timestamp = true;
      } else if (!failed_at.get_double().get(seconds) && std::isfinite(seconds) &&
                 std::fabs(seconds) < 9e15) {  // before 8.0: float seconds
        r->timestamp = std::llround(seconds * 1000);
        r->has_timestamp = true;
      }
    }
    return true;
  }

 private:
  dom::parser parser_{kMaxRecordBytes + 64};
  uint64_t position_ = 0;
};

}  // namespace

std::unique_ptr<BrokerRecordReader> make_sidekiq_reader() {
  return std::make_unique<SidekiqReader>();
}

}  // namespace replaygate::inputs
