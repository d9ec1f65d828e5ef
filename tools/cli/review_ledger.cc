// review --ledger: claims a create decision's idempotency key through gate::LedgerStage.
#include "tools/cli/review_ledger.h"

#include <string_view>
#include <utility>

#include "inputs/records.h"

namespace replaygate::cli {

ReviewClaim claim_review(const Table& table, const Decision& d, const std::vector<InputUse>& uses,
                         const std::string& message_id, const ReviewLedgerOptions& options) {
  ReviewClaim out;
  gate::LedgerStage::Options lo;
  lo.url = options.url;
  lo.scope = options.scope;
  lo.dry_run = options.dry_run;
  lo.mark_recorded = !options.dry_run;
  out.stage = std::make_unique<gate::LedgerStage>(std::move(lo));
  out.stage->open();  // on failure every claim below answers ledger:unavailable

  // The key: the value the decision used for the declared input, when it is a string.
  std::string key;
  bool has_key = false;
  const uint32_t key_field = table.idempotency_key_field();
  if (key_field != Table::kNoField) {
    out.key_input = std::string(table.field(key_field).name);
    for (const InputUse& use : uses) {
      if (use.field == key_field && use.value != nullptr && use.value->is_string()) {
        key = use.value->get<std::string>();
        has_key = !key.empty();
      }
    }
  }
  gate::Pending pending;
  pending.create = true;
  pending.has_key = has_key;
  pending.decision = d;
  inputs::RecordMeta meta;
  meta.has_message_id = !message_id.empty();
  meta.message_id = message_id;
  const std::string_view key_view = key;
  const gate::Claimer::Answer answer =
      out.stage->claim(table, pending, has_key ? &key_view : nullptr, meta);
  out.granted = answer.granted;
  out.claimed = answer.claimed;
  out.rule = answer.rule;
  out.reason = answer.reason;
  out.failed = out.stage->failed();
  out.ledger = out.stage->describe();
  return out;
}

}  // namespace replaygate::cli
