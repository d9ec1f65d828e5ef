// review --ledger: claims a create decision's idempotency key through pipeline::LedgerStage.
#include "tools/cli/review_ledger.h"

#include <string_view>
#include <utility>

#include "inputs/records.h"

namespace replaygate::cli {

ReviewClaim claim_review(const Table& table, const Decision& d,
                         const std::vector<review::InputUse>& uses, const std::string& message_id,
                         const ReviewLedgerOptions& options) {
  ReviewClaim out;
  pipeline::LedgerStage::Options lo;
  lo.url = options.url;
  lo.scope = options.scope;
  lo.dry_run = options.dry_run;
  lo.mark_recorded = !options.dry_run;
  out.stage = std::make_unique<pipeline::LedgerStage>(std::move(lo));
  out.stage->open();  // on failure every claim below answers ledger:unavailable

  // The key: the value the decision used for the declared input, when it is a string.
  std::string key;
  bool has_key = false;
  const uint32_t key_field = table.idempotency_key_field();
  if (key_field != Table::kNoField) {
    out.key_input = std::string(table.field(key_field).name);
    for (const review::InputUse& use : uses) {
      if (use.field == key_field && use.value != nullptr && use.value->is_string()) {
        key = use.value->get<std::string>();
        has_key = !key.empty();
      }
    }
  }
  pipeline::Pending pending;
  pending.create = true;
  pending.has_key = has_key;
  pending.decision = d;
  // One message: a block of one request.
  std::vector<pipeline::Claimer::Request> requests(1);
  requests[0].record = &pending;
  requests[0].keyed = has_key;
  requests[0].key = key;
  requests[0].meta.has_message_id = !message_id.empty();
  requests[0].meta.message_id = message_id;
  std::vector<pipeline::Claimer::Answer> answers;
  out.stage->claim_block(table, requests, answers);
  const pipeline::Claimer::Answer& answer = answers.at(0);
  out.granted = answer.granted;
  out.claimed = answer.claimed;
  out.rule = answer.rule;
  out.reason = answer.reason;
  out.failed = out.stage->failed();
  out.ledger = out.stage->describe();
  return out;
}

}  // namespace replaygate::cli
