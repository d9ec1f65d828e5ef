// A proposal's entries checked against the policy's first decision table (proposal_check.h).
#include "checks/proposal_check.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/names.h"

namespace replaygate::checks {
namespace {

using nlohmann::json;

// Where each top-level array element and each of its members start in a JSON text: the positions
// diagnostics point at (nlohmann keeps none). Only for text that nlohmann parsed as an array.
struct MemberAt {
  std::string key;
  size_t key_offset = 0, value_offset = 0;
};
struct ElementAt {
  size_t offset = 0;
  std::vector<MemberAt> members;
};

class Positions {
 public:
  explicit Positions(std::string_view text) : t_(text) {}
  std::vector<ElementAt> elements() {
    std::vector<ElementAt> out;
    skip_ws();
    if (i_ >= t_.size() || t_[i_] != '[') return out;
    ++i_;
    for (;;) {
      skip_ws();
      if (i_ >= t_.size() || t_[i_] == ']') break;
      ElementAt e;
      e.offset = i_;
      if (t_[i_] == '{') {
        ++i_;
        for (;;) {
          skip_ws();
          if (i_ >= t_.size() || t_[i_] == '}') break;
          MemberAt m;
          m.key_offset = i_;
          m.key = string_value();
          skip_ws();
          if (i_ < t_.size() && t_[i_] == ':') ++i_;
          skip_ws();
          m.value_offset = i_;
          skip_value();
          e.members.push_back(m);
          skip_ws();
          if (i_ < t_.size() && t_[i_] == ',') ++i_;
        }
        if (i_ < t_.size()) ++i_;
      } else {
        skip_value();
      }
      out.push_back(e);
      skip_ws();
      if (i_ < t_.size() && t_[i_] == ',') ++i_;
    }
    return out;
  }

 private:
  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t'))
      ++i_;
  }
  std::string string_value() {
    const size_t start = i_;
    skip_value();
    return json::parse(t_.substr(start, i_ - start), nullptr, false).get<std::string>();
  }
  void skip_value() {
    if (i_ >= t_.size()) return;
    if (t_[i_] == '"') {
      for (++i_; i_ < t_.size() && t_[i_] != '"'; ++i_) {
        if (t_[i_] == '\\') ++i_;
      }
      ++i_;
      return;
    }
    if (t_[i_] == '{' || t_[i_] == '[') {
      int depth = 0;
      for (; i_ < t_.size(); ++i_) {
        const char c = t_[i_];
        if (c == '"') {
          skip_value();
          --i_;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
          ++i_;
          return;
        }
      }
      return;
    }
    while (i_ < t_.size() && t_[i_] != ',' && t_[i_] != '}' && t_[i_] != ']' && t_[i_] != ' ' &&
           t_[i_] != '\n' && t_[i_] != '\r' && t_[i_] != '\t')
      ++i_;
  }
  std::string_view t_;
  size_t i_ = 0;
};

constexpr const auto& kEntryKeys = kProposalEntryKeys;

}  // namespace

std::vector<Diagnostic> check_proposal(std::string_view text, const std::string& path,
                                       const ir::Policy& policy) {
  std::vector<Diagnostic> diags;
  const auto add = [&](size_t offset, size_t length, std::string code, std::string message,
                       std::string hint = "") {
    Diagnostic d;
    d.code = std::move(code);
    d.message = std::move(message);
    d.path = path;
    d.span = span_in_text(text, offset, length);
    d.hint = std::move(hint);
    diags.push_back(std::move(d));
  };
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    add(0, 1, "RG501", "the proposal is not JSON", "a proposal is a JSON array of entries");
  } else if (!doc.is_array()) {
    add(0, 1, "RG501", "the proposal must be a JSON array of entries");
  } else if (ir::first_table(policy) == nullptr) {
    add(0, 1, "RG501", "the policy has no decision table to add rows to");
  } else {
    const ir::Table& table = *ir::first_table(policy);
    std::vector<std::string> key_names;
    for (uint32_t f : table.key_fields) key_names.push_back(policy.fields[f].name);
    std::vector<std::string> allowed(key_names);
    for (const char* k : kEntryKeys) allowed.emplace_back(k);
    std::vector<std::string> verbs;
    for (const ir::Verb& v : policy.verbs) verbs.push_back(v.name);
    const std::vector<ElementAt> at = Positions(text).elements();
    std::map<std::string, std::pair<std::string, size_t>> seen;  // keys -> (verb, index)
    for (size_t i = 0; i < doc.size() && i < at.size(); ++i) {
      const json& entry = doc[i];
      const std::string where = "entry " + std::to_string(i + 1);
      if (!entry.is_object()) {
        add(at[i].offset, 1, "RG502", where + " is not an object");
        continue;
      }
      bool complete_members = true;
      const auto member_at = [&](const std::string& key) -> const MemberAt* {
        for (const MemberAt& m : at[i].members) {
          if (m.key == key) return &m;
        }
        return nullptr;
      };
      std::set<std::string> member_names;
      for (const MemberAt& m : at[i].members) {
        if (!member_names.insert(m.key).second) {
          // JSON parsers keep one of the two (nlohmann the last): a reviewer may read the other.
          add(m.key_offset, m.key.size() + 2, "RG502",
              "key '" + m.key + "' is in " + where + " twice",
              "keep one: a reader may take either value");
          complete_members = false;
        }
        if (std::find(allowed.begin(), allowed.end(), m.key) == allowed.end()) {
          const std::string suggestion = closest_match(m.key, allowed);
          add(m.key_offset, m.key.size() + 2, "RG503", "unknown key '" + m.key + "' in " + where,
              suggestion.empty() ? "an entry has " + std::to_string(allowed.size()) +
                                       " keys: the table's keys, verb, rationale, evidence, row_id"
                                 : "did you mean '" + suggestion + "'?");
        }
      }
      bool complete = true;
      std::vector<ir::Value> values;
      for (size_t k = 0; k < key_names.size(); ++k) {
        const MemberAt* m = member_at(key_names[k]);
        if (m == nullptr) {
          add(at[i].offset, 1, "RG504", where + " has no '" + key_names[k] + "'",
              "every entry names a value for each of the table's keys");
          complete = false;
          continue;
        }
        const json& v = entry[key_names[k]];
        const ir::Field& field = policy.fields[table.key_fields[k]];
        if (v.is_string() && std::any_of(v.get_ref<const std::string&>().begin(),
                                         v.get_ref<const std::string&>().end(), [](char c) {
                                           return static_cast<unsigned char>(c) < 0x20;
                                         })) {
          add(m->value_offset, 1, "RG505",
              "'" + key_names[k] + "' of " + where + " has a control character, which no row holds",
              "remove it");
          complete = false;
          continue;
        }
        if (v.is_string() && v.get_ref<const std::string&>() == "*") {
          // A policy row reads "*" as the wildcard (YAML: '*' quoted; the DSL: *): applied, the
          // row would match every value of the key, not the one the dump showed.
          add(m->value_offset, 3, "RG505",
              "'" + key_names[k] + "' of " + where +
                  " is \"*\", which a policy row reads as the wildcard (any value), not as a value",
              "a row cannot hold the value \"*\": decide such letters with a rule of their own");
          complete = false;
          continue;
        }
        const bool ok = field.type == ir::FieldType::kString ? v.is_string()
                        : field.type == ir::FieldType::kInt  ? v.is_number_integer()
                        : field.type == ir::FieldType::kBool ? v.is_boolean()
                                                             : v.is_string();
        if (!ok) {
          add(m->value_offset, v.dump().size(), "RG505",
              "'" + key_names[k] + "' of " + where + " is " + v.dump() +
                  ", not a value of its input's type",
              "write it as the policy's rows do");
          complete = false;
          continue;
        }
        values.push_back(v.is_string()    ? ir::Value::String(v.get<std::string>())
                         : v.is_boolean() ? ir::Value::Bool(v.get<bool>())
                                          : ir::Value::Int(v.get<int64_t>()));
      }
      const MemberAt* verb_at = member_at("verb");
      std::string verb;
      if (verb_at == nullptr || !entry["verb"].is_string()) {
        add(verb_at ? verb_at->value_offset : at[i].offset, 1, "RG506",
            verb_at ? "the verb of " + where + " is " + entry["verb"].dump() +
                          ", not a string naming one of the policy's verbs"
                    : where + " has no verb (a string naming one of the policy's verbs)");
        complete = false;
      } else {
        verb = entry["verb"].get<std::string>();
        if (std::find(verbs.begin(), verbs.end(), verb) == verbs.end()) {
          const std::string suggestion = closest_match(verb, verbs);
          add(verb_at->value_offset, verb.size() + 2, "RG506",
              "unknown verb '" + verb + "' in " + where + ": the policy does not declare it",
              suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
          complete = false;
        }
      }
      if (const MemberAt* r = member_at("rationale"); r && !entry["rationale"].is_string()) {
        add(r->value_offset, 1, "RG502", "the rationale of " + where + " must be a string");
      } else if (r == nullptr || entry["rationale"].get<std::string>().find_first_not_of(" \t") ==
                                     std::string::npos) {
        // apply refuses it (the rationale becomes the row's reason): check says so first.
        add(r ? r->value_offset : at[i].offset, 1, "RG502",
            where + " has no rationale: a row needs the reviewer's reason",
            "write it in the entry's \"rationale\"");
      }
      if (const MemberAt* r = member_at("row_id")) {
        const json& id = entry["row_id"];
        if (!id.is_string() || !names::is_name(id.get<std::string>())) {
          add(r->value_offset, id.dump().size(), "RG502",
              "the row_id of " + where + " is " + id.dump() + ", not a name",
              "a row id is a name as the policy writes them: letters, digits, '_', '.', '-'");
          complete = false;
        } else {
          for (const ir::Rule& rule : policy.rules) {
            const std::string existing = std::holds_alternative<ir::Guard>(rule)
                                             ? std::get<ir::Guard>(rule).id
                                             : std::get<ir::Table>(rule).id;
            bool clash = existing == id.get<std::string>();
            if (const ir::Table* t = std::get_if<ir::Table>(&rule)) {
              for (const ir::Row& row : t->rows) clash = clash || row.id == id.get<std::string>();
            }
            if (clash) {
              add(r->value_offset, id.dump().size(), "RG502",
                  "the row_id of " + where + " is already a rule's id: " + id.dump(),
                  "choose another id");
              complete = false;
              break;
            }
          }
        }
      }
      if (!complete || !complete_members) continue;
      json keys = json::object();
      for (const std::string& name : key_names) keys[name] = entry[name];
      const std::string id = keys.dump();
      if (auto it = seen.find(id); it != seen.end()) {
        const bool same = it->second.first == verb;
        add(at[i].offset, 1, same ? "RG507" : "RG508",
            where + (same ? " repeats entry " : " conflicts with entry ") +
                std::to_string(it->second.second + 1) +
                (same ? " (the same keys and verb)"
                      : " (the same keys, verb '" + it->second.first + "' there, '" + verb +
                            "' here)"),
            same ? "remove one" : "keep the one the reviewers agree on");
        continue;
      }
      seen[id] = {verb, i};
      for (const ir::Row& row : table.rows) {
        bool match = true;
        for (size_t k = 0; k < values.size() && match; ++k) {
          match = row.keys[k].has_value() && *row.keys[k] == values[k];
        }
        if (match) {
          add(at[i].offset, 1, "RG509",
              where + " is already decided: row '" + row.id + "' gives it '" +
                  policy.verbs[row.verb].name + "'",
              "remove the entry; change the row itself to change its verb");
          break;
        }
      }
    }
  }
  sort_diagnostics(diags);
  return diags;
}

}  // namespace replaygate::checks
