// The text forms of a redrive run's counts: the progress line and Prometheus metrics (stats.h).
#include "redrive/stats.h"

#include <cstdio>
#include <string_view>
#include <utility>

#include "common/plural.h"

namespace replaygate::redrive {
namespace {

// A Prometheus label value: backslash, double quote and line feed escaped.
std::string label(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string counts_text(const RunStats& s, const Table& table) {
  std::string verbs;
  for (uint32_t v = 0; v < s.per_verb.size() && v < table.verb_count(); ++v) {
    if (s.per_verb[v] == 0) continue;
    verbs += (verbs.empty() ? "" : ", ") + std::string(table.verb_name(v)) + " " +
             std::to_string(s.per_verb[v]);
  }
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", s.rate);
  std::string text =
      plural(s.handled, "letter") + (verbs.empty() ? "" : " (" + verbs + ")") + ": " +
      std::to_string(s.republished) + " republished, " + std::to_string(s.parked) + " parked, " +
      std::to_string(s.held) + " held, " + std::to_string(s.acked_only) +
      " acked as already replayed, " + std::to_string(s.skipped) + " skipped" +
      (s.left > 0 ? ", " + std::to_string(s.left) + " left in the queue" : "") + "; " + rate + "/s";
  if (s.queue_depth) text += "; queue depth " + std::to_string(*s.queue_depth);
  if (s.reconnects > 0) text += "; " + std::to_string(s.reconnects) + " reconnects";
  return text;
}

std::string metrics_text(const RunStats& s, const Table& table, const std::string& queue) {
  std::string q = "queue=\"" + label(queue) + "\"";
  std::string out;
  out += "# HELP replaygate_gate_letters_total Dead letters handled, by verb.\n";
  out += "# TYPE replaygate_gate_letters_total counter\n";
  for (uint32_t v = 0; v < s.per_verb.size() && v < table.verb_count(); ++v) {
    out += "replaygate_gate_letters_total{" + q + ",verb=\"" + label(table.verb_name(v)) + "\"} " +
           std::to_string(s.per_verb[v]) + "\n";
  }
  out += "# HELP replaygate_gate_actions_total What the gate did with the letters it handled.\n";
  out += "# TYPE replaygate_gate_actions_total counter\n";
  for (const auto& [name, value] :
       {std::pair{"republish", s.republished}, std::pair{"park", s.parked},
        std::pair{"hold", s.held}, std::pair{"ack_already_replayed", s.acked_only},
        std::pair{"skip", s.skipped}, std::pair{"leave", s.left}}) {
    out += "replaygate_gate_actions_total{" + q + ",action=\"" + name + "\"} " +
           std::to_string(value) + "\n";
  }
  out += "# HELP replaygate_gate_unreadable_total Letters held because they could not be read.\n";
  out += "# TYPE replaygate_gate_unreadable_total counter\n";
  out += "replaygate_gate_unreadable_total{" + q + "} " + std::to_string(s.unreadable) + "\n";
  out += "# HELP replaygate_gate_reconnects_total Broker reconnections.\n";
  out += "# TYPE replaygate_gate_reconnects_total counter\n";
  out += "replaygate_gate_reconnects_total{" + q + "} " + std::to_string(s.reconnects) + "\n";
  out +=
      "# HELP replaygate_gate_died_again_total Letters handled that a gate had replayed "
      "before (a replay marker of 1 or more): the replayed copy died again.\n";
  out += "# TYPE replaygate_gate_died_again_total counter\n";
  out += "replaygate_gate_died_again_total{" + q + "} " + std::to_string(s.died_again) + "\n";
  if (s.queue_depth) {
    out += "# HELP replaygate_gate_queue_depth Messages in the dead-letter queue.\n";
    out += "# TYPE replaygate_gate_queue_depth gauge\n";
    out += "replaygate_gate_queue_depth{" + q + "} " + std::to_string(*s.queue_depth) + "\n";
  }
  // Absent, not 0, while unknown: a broker that cannot say, a failed read, no read yet.
  if (s.held_letters) {
    out += "# HELP replaygate_gate_held_letters Letters waiting in the hold place.\n";
    out += "# TYPE replaygate_gate_held_letters gauge\n";
    out += "replaygate_gate_held_letters{" + q + "} " + std::to_string(*s.held_letters) + "\n";
  }
  if (s.oldest_held_seconds) {
    char age[32];
    std::snprintf(age, sizeof age, "%.3f", *s.oldest_held_seconds);
    out +=
        "# HELP replaygate_gate_oldest_held_seconds Seconds since the oldest held letter died.\n";
    out += "# TYPE replaygate_gate_oldest_held_seconds gauge\n";
    out += "replaygate_gate_oldest_held_seconds{" + q + "} " + age + "\n";
  }
  if (s.parked_letters) {
    out += "# HELP replaygate_gate_parked_letters Letters waiting in the park place.\n";
    out += "# TYPE replaygate_gate_parked_letters gauge\n";
    out += "replaygate_gate_parked_letters{" + q + "} " + std::to_string(*s.parked_letters) + "\n";
  }
  out += "# HELP replaygate_gate_table_info The decision table serving.\n";
  out += "# TYPE replaygate_gate_table_info gauge\n";
  out += "replaygate_gate_table_info{" + q + ",policy=\"" + label(table.policy_id()) +
         "\",revision=\"" + std::to_string(table.revision()) + "\",checksum=\"" +
         table.checksum_hex() + "\"} 1\n";
  return out;
}

}  // namespace replaygate::redrive
