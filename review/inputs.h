// Where `replaygate review` takes each policy input from: the message file, the operation record
// file or the operator's --confirm (docs/recovery.md, "Input mapping"). The one entry point is
// map_review_inputs(); set_inputs() (record.h) sets the Input from its result and the record shows
// it, so the record shows for every input the value the policy used and where it came from.
//
// The policy's `source:` of each input (FieldInfo::source) limits the places:
//   operator-only  never read from the files: a bool input is --confirm (true, else false); any
//                  other type stays unset. A value either file offers is ignored and reported.
//   record-only    only the record's places (below); a value the message offers is ignored and
//                  reported, and when the record has none the input is missing (fail closed),
//                  never filled from the message.
//   letter         every place, first given wins.
// The places, in order:
//   operator_confirmed  --confirm (as for operator-only, whatever its source)
//   message_revision    message.revision (record-only: record.message_revision)
//   record_revision     record.revision
//   remote_job_id       record.remote_job_id, message.remote_job_id, message.error.job_id; null and
//                       "" are "not given" there and the search goes on
//   anything else       record.NAME, message.NAME
// Derived inputs are computed, never read (InputUse::derived).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/table.h"

namespace replaygate::review {

// One place a value may come from: a key path in the message or the record.
struct ReviewPlace {
  bool in_record = false;
  std::vector<std::string> path;  // {"error", "job_id"}
  std::string name() const;       // "record.phase", "message.error.job_id"
};

// A value a file offered for an input that the input's source does not allow, so it was not used.
struct IgnoredOffer {
  std::string from;                       // "message.phase"
  const nlohmann::json* value = nullptr;  // into the message or record (never null)
};

struct InputUse {
  uint32_t field = 0;
  std::string name;
  FieldSource source = FieldSource::kLetter;  // the policy's `source:`
  bool derived = false;                       // computed: value, from stay empty
  // The value set in the Input: into the message, the record or the caller's `confirmed`;
  // nullptr when the input stays unset (missing).
  const nlohmann::json* value = nullptr;
  // Where the value came from: a place name ("record.phase"), "--confirm"; "" when unset.
  std::string from;
  // When unset: the places that were looked at ("record.phase"), or why none was
  // ("operator-only: review sets only bool operator inputs").
  std::string unset_because;
  std::vector<IgnoredOffer> ignored;
};

// The uses of every input of `table`, in field order. `confirmed` is the JSON bool of --confirm;
// message, record and confirmed must outlive the result (it points into them).
std::vector<InputUse> map_review_inputs(const Table& table, const nlohmann::json& message,
                                        const nlohmann::json& record,
                                        const nlohmann::json& confirmed);

// The job id the review record shows when the policy has no remote_job_id input: the first given
// (not null, not "") of record.remote_job_id, message.remote_job_id, message.error.job_id.
const nlohmann::json* review_job_id(const nlohmann::json& message, const nlohmann::json& record);

}  // namespace replaygate::review
