// map_review_inputs(): the places of each input and the policy's source rules (inputs.h).
#include "review/inputs.h"

#include <string>
#include <vector>

namespace replaygate::review {
namespace {

using nlohmann::json;

// The value at `path` in `doc`, or nullptr; only objects are descended into.
const json* at_path(const json& doc, const std::vector<std::string>& path) {
  const json* node = &doc;
  for (const std::string& key : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

// The places an input named `name` may come from, all of them (before the source rules).
std::vector<ReviewPlace> places_of(const std::string& name) {
  if (name == "message_revision") return {{false, {"revision"}}};
  if (name == "record_revision") return {{true, {"revision"}}};
  if (name == "remote_job_id") {
    return {{true, {"remote_job_id"}}, {false, {"remote_job_id"}}, {false, {"error", "job_id"}}};
  }
  return {{true, {name}}, {false, {name}}};
}

// Whether a place gives a value. For the job id, null and "" are "not given here" and the search
// goes on, so an empty record.remote_job_id cannot hide the job id of a failed POST's error
// envelope (which would make a known job look absent and let the policy dispatch it again).
// Elsewhere a JSON null is a value (absent) and stops the search.
bool gives(const json* value, bool skip_empty) {
  if (value == nullptr) return false;
  if (!skip_empty) return true;
  return !value->is_null() && !(value->is_string() && value->get_ref<const std::string&>().empty());
}

std::string join_names(const std::vector<ReviewPlace>& places) {
  std::string out;
  for (const ReviewPlace& p : places) out += (out.empty() ? "" : ", ") + p.name();
  return out;
}

}  // namespace

std::string ReviewPlace::name() const {
  std::string out = in_record ? "record" : "message";
  for (const std::string& key : path) out += "." + key;
  return out;
}

const json* review_job_id(const json& message, const json& record) {
  for (const ReviewPlace& place : places_of("remote_job_id")) {
    const json* v = at_path(place.in_record ? record : message, place.path);
    if (gives(v, true)) return v;
  }
  return nullptr;
}

std::vector<InputUse> map_review_inputs(const Table& table, const json& message, const json& record,
                                        const json& confirmed) {
  std::vector<InputUse> out;
  for (uint32_t f = 0; f < table.field_count(); ++f) {
    const FieldInfo info = table.field(f);
    InputUse use;
    use.field = f;
    use.name = std::string(info.name);
    use.source = info.source;
    use.derived = table.field_derived(f);
    if (use.derived) {
      out.push_back(std::move(use));
      continue;
    }
    const bool skip_empty = use.name == "remote_job_id";
    std::vector<ReviewPlace> places = places_of(use.name);
    const auto offer = [&](const ReviewPlace& place) {
      const json* v = at_path(place.in_record ? record : message, place.path);
      if (gives(v, skip_empty)) use.ignored.push_back({place.name(), v});
    };
    if (info.source == FieldSource::kOperator || use.name == "operator_confirmed") {
      // Only an operator sets it: whatever either file says is ignored.
      for (const ReviewPlace& place : places) offer(place);
      if (info.type == FieldType::kBool) {
        use.value = &confirmed;
        use.from = "--confirm";
      } else {
        use.unset_because = "operator-only: review sets only bool operator inputs (--confirm)";
      }
      out.push_back(std::move(use));
      continue;
    }
    if (info.source == FieldSource::kRecord) {
      // Only the durable record: the message's places are offers to ignore, not fallbacks.
      std::vector<ReviewPlace> kept;
      for (const ReviewPlace& place : places) {
        if (place.in_record) {
          kept.push_back(place);
        } else {
          offer(place);
        }
      }
      places = kept.empty() ? std::vector<ReviewPlace>{{true, {use.name}}} : kept;
    }
    for (const ReviewPlace& place : places) {
      const json* v = at_path(place.in_record ? record : message, place.path);
      if (gives(v, skip_empty)) {
        use.value = v;
        use.from = place.name();
        break;
      }
    }
    if (use.value == nullptr) use.unset_because = "not in " + join_names(places);
    out.push_back(std::move(use));
  }
  return out;
}

}  // namespace replaygate::review
