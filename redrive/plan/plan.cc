// The plan model, the letter identity, and the plan file's streaming writer and reader (plan.h).
#include "redrive/plan/plan.h"

#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/codes.h"
#include "runtime/verify/keys.h"

namespace replaygate::plan {
namespace {

using nlohmann::json;

constexpr size_t kHashBytes = 32;

// The canonical text of a JSON value: keys sorted, no spaces; bytes that are not UTF-8 (which
// nlohmann would refuse to write) replaced, so it never throws.
std::string canonical(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void put_field(crypto_generichash_state* state, std::string_view bytes) {
  uint8_t size[8];
  uint64_t n = bytes.size();
  for (uint8_t& b : size) {
    b = static_cast<uint8_t>(n & 0xff);
    n >>= 8;
  }
  crypto_generichash_update(state, size, sizeof size);
  crypto_generichash_update(state, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string finish_hex(crypto_generichash_state* state) {
  uint8_t out[kHashBytes];
  crypto_generichash_final(state, out, sizeof out);
  return std::string(kDigestPrefix) + verify::hex(out, sizeof out);
}

// Reads one member, type-checked: "" or the problem.
template <typename T>
std::string take(const json& j, const char* name, T* out) {
  const auto it = j.find(name);
  if (it == j.end()) return std::string("missing \"") + name + "\"";
  try {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!it->is_string()) return std::string("\"") + name + "\" is not a string";
    } else if constexpr (std::is_same_v<T, double>) {
      if (!it->is_number()) return std::string("\"") + name + "\" is not a number";
    } else {
      if (!it->is_number_integer()) return std::string("\"") + name + "\" is not an integer";
    }
    *out = it->get<T>();
  } catch (const json::exception&) {
    return std::string("\"") + name + "\" is out of range";
  }
  return "";
}

std::string take_optional(const json& j, const char* name, std::optional<std::string>* out) {
  const auto it = j.find(name);
  if (it == j.end()) return std::string("missing \"") + name + "\"";
  if (it->is_null()) {
    out->reset();
    return "";
  }
  if (!it->is_string()) return std::string("\"") + name + "\" is neither a string nor null";
  *out = it->get<std::string>();
  return "";
}

bool is_hex(std::string_view text) {
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

struct PlanWriter::Hasher {
  crypto_generichash_state state;
};

std::string digest_of(std::string_view bytes) {
  verify::init();
  uint8_t out[kHashBytes];
  crypto_generichash(out, sizeof out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                     nullptr, 0);
  return std::string(kDigestPrefix) + verify::hex(out, sizeof out);
}

bool is_digest(std::string_view text) {
  return text.size() == kDigestPrefix.size() + 2 * kHashBytes &&
         text.substr(0, kDigestPrefix.size()) == kDigestPrefix &&
         is_hex(text.substr(kDigestPrefix.size()));
}

InputValues input_values(const Table& table, const Input& input) {
  InputValues values;
  values.reserve(table.field_count());
  for (uint32_t f = 0; f < table.field_count(); ++f) {
    const Input::Slot slot = input.slot(f);
    std::string text;
    switch (slot.state) {
      case Input::Slot::State::kUnset:
        text = "unset";
        break;
      case Input::Slot::State::kNull:
        text = "null";
        break;
      case Input::Slot::State::kString:
        text = "s:" + std::string(slot.s);
        break;
      case Input::Slot::State::kInt:
        text = "i:" + std::to_string(slot.i);
        break;
      case Input::Slot::State::kBool:
        text = slot.b ? "b:true" : "b:false";
        break;
      case Input::Slot::State::kInvalid:
        text = "invalid";
        break;
    }
    values.emplace_back(std::string(table.field(f).name), std::move(text));
  }
  return values;
}

std::string letter_identity(std::string_view source, const std::optional<std::string>& message_id,
                            std::string_view body_digest, const InputValues& inputs) {
  verify::init();
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, kHashBytes);
  put_field(&state, "replaygate letter v1");
  put_field(&state, source);
  put_field(&state, message_id ? std::string_view(*message_id) : std::string_view("\x01none"));
  put_field(&state, body_digest);
  for (const auto& [name, value] : inputs) put_field(&state, name + "=" + value);
  return finish_hex(&state);
}

void PlanSummary::add(const PlanLetter& letter) {
  ++letters;
  copies += letter.count;
  VerbCount& v = by_verb[letter.decision.verb];
  v.effect = letter.decision.effect;
  ++v.letters;
  v.copies += letter.count;
}

json to_json(const PlanHeader& h) {
  return json{{"plan_id", h.plan_id},
              {"source", h.source},
              {"input_format", h.input_format},
              {"author", h.author},
              {"created_at", h.created_at},
              {"expires_at", h.expires_at},
              {"policy", h.policy},
              {"policy_revision", h.policy_revision},
              {"table_checksum", h.table_checksum},
              {"cap", h.cap},
              {"rate", h.rate},
              {"required_approvals", h.required_approvals},
              {"filters", h.filters}};
}

json to_json(const PlanLetter& l) {
  json decision{{"verb", l.decision.verb},
                {"rule", l.decision.rule},
                {"effect", l.decision.effect},
                {"action", l.decision.action},
                {"target", l.decision.target ? json(*l.decision.target) : json(nullptr)}};
  return json{{"identity", l.identity},
              {"source", l.source},
              {"message_id", l.message_id ? json(*l.message_id) : json(nullptr)},
              {"idempotency_key", l.idempotency_key ? json(*l.idempotency_key) : json(nullptr)},
              {"body_digest", l.body_digest},
              {"count", l.count},
              {"first_line", l.first_line},
              {"decision", std::move(decision)}};
}

json to_json(const PlanSummary& s) {
  json by_verb = json::object();
  for (const auto& [verb, c] : s.by_verb) {
    by_verb[verb] = json{{"effect", c.effect}, {"letters", c.letters}, {"copies", c.copies}};
  }
  return json{{"letters", s.letters}, {"copies", s.copies}, {"by_verb", std::move(by_verb)}};
}

std::string from_json(const json& j, PlanHeader* h) {
  if (!j.is_object()) return "the header is not an object";
  std::string why;
  if (!(why = take(j, "plan_id", &h->plan_id)).empty()) return why;
  if (!(why = take(j, "source", &h->source)).empty()) return why;
  if (!(why = take(j, "input_format", &h->input_format)).empty()) return why;
  if (!(why = take(j, "author", &h->author)).empty()) return why;
  if (!(why = take(j, "created_at", &h->created_at)).empty()) return why;
  if (!(why = take(j, "expires_at", &h->expires_at)).empty()) return why;
  if (!(why = take(j, "policy", &h->policy)).empty()) return why;
  if (!(why = take(j, "policy_revision", &h->policy_revision)).empty()) return why;
  if (!(why = take(j, "table_checksum", &h->table_checksum)).empty()) return why;
  if (!(why = take(j, "cap", &h->cap)).empty()) return why;
  if (!(why = take(j, "rate", &h->rate)).empty()) return why;
  if (!(why = take(j, "required_approvals", &h->required_approvals)).empty()) return why;
  const auto filters = j.find("filters");
  if (filters == j.end() || !filters->is_object()) return "\"filters\" is not an object";
  h->filters = *filters;
  if (h->cap < 0) return "\"cap\" is negative";
  if (h->rate < 0) return "\"rate\" is negative";
  if (h->required_approvals < 0) return "\"required_approvals\" is negative";
  if (h->author.empty()) return "\"author\" is empty";
  return "";
}

std::string from_json(const json& j, PlanLetter* l) {
  if (!j.is_object()) return "a letter is not an object";
  std::string why;
  if (!(why = take(j, "identity", &l->identity)).empty()) return why;
  if (!is_digest(l->identity)) return "\"identity\" is not blake2b:<64 hex>";
  if (!(why = take(j, "source", &l->source)).empty()) return why;
  if (!(why = take_optional(j, "message_id", &l->message_id)).empty()) return why;
  if (!(why = take_optional(j, "idempotency_key", &l->idempotency_key)).empty()) return why;
  if (!(why = take(j, "body_digest", &l->body_digest)).empty()) return why;
  if (!(why = take(j, "count", &l->count)).empty()) return why;
  if (l->count < 1) return "\"count\" is less than 1";
  if (!(why = take(j, "first_line", &l->first_line)).empty()) return why;
  const auto d = j.find("decision");
  if (d == j.end() || !d->is_object()) return "\"decision\" is not an object";
  if (!(why = take(*d, "verb", &l->decision.verb)).empty()) return why;
  if (!(why = take(*d, "rule", &l->decision.rule)).empty()) return why;
  if (!(why = take(*d, "effect", &l->decision.effect)).empty()) return why;
  if (!(why = take(*d, "action", &l->decision.action)).empty()) return why;
  return take_optional(*d, "target", &l->decision.target);
}

std::string from_json(const json& j, PlanSummary* s) {
  if (!j.is_object()) return "the summary is not an object";
  std::string why;
  if (!(why = take(j, "letters", &s->letters)).empty()) return why;
  if (!(why = take(j, "copies", &s->copies)).empty()) return why;
  const auto by = j.find("by_verb");
  if (by == j.end() || !by->is_object()) return "\"by_verb\" is not an object";
  s->by_verb.clear();
  for (const auto& [verb, c] : by->items()) {
    if (!c.is_object()) return "\"by_verb\"." + verb + " is not an object";
    VerbCount v;
    if (!(why = take(c, "effect", &v.effect)).empty()) return why;
    if (!(why = take(c, "letters", &v.letters)).empty()) return why;
    if (!(why = take(c, "copies", &v.copies)).empty()) return why;
    s->by_verb[verb] = v;
  }
  return "";
}

std::string plan_digest(const json& header, const std::string& letters_hash, const json& summary) {
  verify::init();
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, kHashBytes);
  const std::string head = canonical(header);
  const std::string tail = canonical(summary);
  static constexpr char kTag[] = "replaygate plan v1";
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>(kTag), sizeof kTag);
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>(head.data()), head.size());
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>("\0"), 1);
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>(letters_hash.data()),
                            letters_hash.size());
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>("\0"), 1);
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>(tail.data()), tail.size());
  return finish_hex(&state);
}

PlanWriter::PlanWriter(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), letters_(std::make_unique<Hasher>()) {
  verify::init();
  crypto_generichash_init(&letters_->state, nullptr, 0, kHashBytes);
}

PlanWriter::~PlanWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

bool PlanWriter::write(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd_, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = "cannot write " + tmp_ + ": " + std::strerror(errno);
      return false;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool PlanWriter::begin(const PlanHeader& header) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error_ = "cannot create " + tmp_ + ": " + std::strerror(errno);
    return false;
  }
  header_ = to_json(header);
  return write("{\"format_version\":1,\"header\":" + canonical(header_) + ",\n\"letters\":[");
}

bool PlanWriter::add(const PlanLetter& letter) {
  const std::string line = canonical(to_json(letter));
  crypto_generichash_update(&letters_->state, reinterpret_cast<const uint8_t*>(line.data()),
                            line.size());
  crypto_generichash_update(&letters_->state, reinterpret_cast<const uint8_t*>("\n"), 1);
  summary_.add(letter);
  const bool ok = write(first_ ? "\n" : ",\n") && write(line);
  first_ = false;
  return ok;
}

bool PlanWriter::sync() {
  if (fd_ >= 0 && ::fsync(fd_) == 0) return true;
  error_ = "cannot write " + tmp_ + ": " + std::strerror(errno);
  return false;
}

void PlanWriter::keep_unfinished() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string PlanWriter::finish() {
  uint8_t hash[kHashBytes];
  crypto_generichash_final(&letters_->state, hash, sizeof hash);
  const json summary = to_json(summary_);
  const std::string digest =
      plan_digest(header_, std::string(reinterpret_cast<const char*>(hash), sizeof hash), summary);
  if (!write("\n],\n\"summary\":" + canonical(summary) + ",\n\"digest\":\"" + digest + "\"}\n")) {
    return "";
  }
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    error_ = "cannot write " + tmp_ + ": " + std::strerror(errno);
    fd_ = -1;
    ::unlink(tmp_.c_str());
    return "";
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    error_ = "cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(errno);
    ::unlink(tmp_.c_str());
    return "";
  }
  return digest;
}

std::string json_reason(std::string_view what, uint64_t* line, uint64_t* column) {
  if (what.rfind("[json.exception.", 0) == 0) what.remove_prefix(what.find("] ") + 2);
  constexpr std::string_view kAt = "parse error at line ";
  if (what.rfind(kAt, 0) != 0) return std::string(what);
  unsigned long long l = 0, c = 0;
  int used = 0;
  const std::string rest(what.substr(kAt.size()));
  if (std::sscanf(rest.c_str(), "%llu, column %llu: %n", &l, &c, &used) != 2 || used == 0) {
    return std::string(what);
  }
  *line = l;
  *column = c;
  return rest.substr(static_cast<size_t>(used));
}

namespace {

struct Stop {
  std::string why;
};

}  // namespace

PlanRead read_plan(std::istream& in, const std::function<bool(const PlanLetter&)>& on_letter) {
  verify::init();
  PlanRead out;
  crypto_generichash_state letters_state;
  crypto_generichash_init(&letters_state, nullptr, 0, kHashBytes);
  PlanSummary counted;
  std::string last_key;
  bool in_letters = false, seen_letters = false;
  uint64_t letter_number = 0;
  json top;
  try {
    top = json::parse(in, [&](int depth, json::parse_event_t event, json& parsed) {
      using E = json::parse_event_t;
      if ((event == E::object_start || event == E::array_start) && depth > kMaxDepth) {
        throw Stop{"nested deeper than " + std::to_string(kMaxDepth) + " levels"};
      }
      if (depth == 1 && event == E::key) last_key = parsed.get<std::string>();
      if (depth == 1 && event == E::array_start && last_key == "letters") {
        if (seen_letters) throw Stop{"\"letters\" appears twice"};
        in_letters = seen_letters = true;
      }
      if (depth == 1 && event == E::array_end) in_letters = false;
      if (!in_letters || depth != 2) return true;
      if (event == E::value)
        throw Stop{"letter " + std::to_string(letter_number + 1) + " is not an object"};
      if (event != E::object_end) return true;
      ++letter_number;
      PlanLetter letter;
      if (const std::string why = from_json(parsed, &letter); !why.empty()) {
        throw Stop{"letter " + std::to_string(letter_number) + ": " + why};
      }
      const std::string line = canonical(parsed);
      crypto_generichash_update(&letters_state, reinterpret_cast<const uint8_t*>(line.data()),
                                line.size());
      crypto_generichash_update(&letters_state, reinterpret_cast<const uint8_t*>("\n"), 1);
      counted.add(letter);
      if (on_letter && !on_letter(letter)) throw Stop{"stopped"};
      return false;  // discarded: one letter in memory at a time
    });
  } catch (const Stop& stop) {
    out.error = stop.why;
    return out;
  } catch (const json::exception& e) {
    out.error = "not JSON: " + json_reason(e.what(), &out.line, &out.column);
    return out;
  }
  if (!top.is_object()) {
    out.error = "not a plan: the file is not a JSON object";
    return out;
  }
  const auto version = top.find("format_version");
  if (version == top.end() || !version->is_number_integer() || *version != kFormatVersion) {
    out.error = "not a plan of format_version 1 (\"format_version\" is " +
                (version == top.end() ? std::string("missing") : version->dump()) + ")";
    return out;
  }
  if (!seen_letters) {
    out.error = "\"letters\" is missing or not an array";
    return out;
  }
  const auto header = top.find("header");
  const auto summary = top.find("summary");
  const auto digest = top.find("digest");
  if (header == top.end()) {
    out.error = "\"header\" is missing";
    return out;
  }
  if (std::string why = from_json(*header, &out.header); !why.empty()) {
    out.error = "header: " + why;
    return out;
  }
  if (summary == top.end()) {
    out.error = "\"summary\" is missing";
    return out;
  }
  if (std::string why = from_json(*summary, &out.summary); !why.empty()) {
    out.error = "summary: " + why;
    return out;
  }
  if (digest == top.end() || !digest->is_string()) {
    out.error = "\"digest\" is missing or not a string";
    return out;
  }
  out.digest = digest->get<std::string>();
  uint8_t hash[kHashBytes];
  crypto_generichash_final(&letters_state, hash, sizeof hash);
  out.computed_digest =
      plan_digest(*header, std::string(reinterpret_cast<const char*>(hash), sizeof hash), *summary);
  if (!(counted == out.summary)) {
    out.error = "the summary says " + std::to_string(out.summary.letters) + " letters and " +
                std::to_string(out.summary.copies) + " copies; the plan lists " +
                std::to_string(counted.letters) + " letters and " + std::to_string(counted.copies) +
                " copies";
    return out;
  }
  out.ok = true;
  return out;
}

PlanRead read_plan_file(const std::string& path,
                        const std::function<bool(const PlanLetter&)>& on_letter) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    PlanRead out;
    out.error = "cannot read plan " + path + ": it is a directory";
    return out;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    PlanRead out;
    out.error = "cannot read plan " + path + ": " + std::strerror(errno);
    return out;
  }
  PlanRead out = read_plan(in, on_letter);
  if (!out.ok && out.error.rfind("cannot read", 0) != 0) {
    const std::string where =
        out.line == 0 ? path
                      : path + ":" + std::to_string(out.line) + ":" + std::to_string(out.column);
    out.error = where + ": " + out.error;
  }
  return out;
}

std::string rabbitmq_source(std::string_view vhost, std::string_view queue) {
  std::string source = "rabbitmq:/";
  for (char c : vhost) {
    if (c == '/') {
      source += "%2F";
    } else if (c == '%') {
      source += "%25";
    } else {
      source += c;
    }
  }
  source += '/';
  source += queue;
  return source;
}

std::string plan_queue_name(std::string_view queue, std::string_view plan_id) {
  std::string name(queue);
  name += ".plan.";
  name += plan_id;
  return name;
}

std::optional<PlanHeader> unfinished_header(std::istream& in, const std::string& name,
                                            std::string* error) {
  // PlanWriter::begin() writes `{"format_version":1,"header":{...},` and a newline first; a line
  // over 1 MiB is not one (a header is small).
  std::string line;
  char c = 0;
  while (line.size() <= (size_t{1} << 20) && in.get(c) && c != '\n') line += c;
  const auto not_a_header = [&]() {
    *error = name + " does not start with a plan's header line";
    return std::nullopt;
  };
  if (c != '\n' || line.empty() || line.back() != ',') return not_a_header();
  line.back() = '}';
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("header") || !j.contains("format_version") ||
      j.at("format_version") != kFormatVersion) {
    return not_a_header();
  }
  PlanHeader header;
  if (const std::string why = from_json(j.at("header"), &header); !why.empty()) {
    *error = name + ": " + why;
    return std::nullopt;
  }
  return header;
}

std::optional<PlanHeader> read_unfinished_header(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  return unfinished_header(in, path, error);
}

std::string new_plan_id(std::string_view source, std::string_view author,
                        std::string_view created_at) {
  verify::init();
  uint8_t nonce[16];
  randombytes_buf(nonce, sizeof nonce);
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, kHashBytes);
  put_field(&state, source);
  put_field(&state, author);
  put_field(&state, created_at);
  put_field(&state, std::string_view(reinterpret_cast<const char*>(nonce), sizeof nonce));
  return finish_hex(&state).substr(kDigestPrefix.size(), 12);
}

}  // namespace replaygate::plan
