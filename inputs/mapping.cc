// Mapping file: strict YAML tree -> Mapping checked against the table's inputs (see mapping.h).
#include "inputs/mapping.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/yaml_tree.h"  // the strict YAML tree (moving to common/)
#include "inputs/records.h"    // scan_json_shape()
#include "runtime/trace.h"

namespace replaygate::inputs {
namespace {

// The symbol of a derived input's comparison, by its on-disk code (StructureField::derived_op:
// eq ne lt le gt ge). Until the table format owns the op names (issue 18, one vocabulary), this
// is the one spelling inputs/ has without the compiler's IR.
const char* derived_op_symbol(uint32_t code) {
  switch (code) {
    case 0:
      return "==";
    case 1:
      return "!=";
    case 4:
      return "<";
    case 5:
      return "<=";
    case 6:
      return ">";
    case 7:
      return ">=";
    default:
      return "?";
  }
}

class Checker {
 public:
  Checker(const std::string& path, const Table& table) : path_(path), table_(table) {}

  void error(const yaml::Node& node, const char* code, std::string message, std::string hint = "") {
    Diagnostic d;
    d.severity = Severity::kError;
    d.code = code;
    d.message = std::move(message);
    d.path = path_;
    d.span = node.span;
    d.hint = std::move(hint);
    diagnostics_.push_back(std::move(d));
  }

  // Reports keys of `node` (a mapping) not in `allowed`, with a suggestion.
  void check_keys(const yaml::Node& node, const std::vector<std::string>& allowed,
                  const std::string& where) {
    for (const auto& [key, value] : node.entries) {
      if (std::find(allowed.begin(), allowed.end(), key.scalar) != allowed.end()) continue;
      const std::string suggestion = closest_match(key.scalar, allowed);
      error(key, "RG301", "unknown key '" + key.scalar + "' in " + where,
            suggestion.empty() ? "allowed keys: " + join(allowed)
                               : "did you mean '" + suggestion + "'?");
    }
  }

  // The `description:` of mapping `node`: text for people, never read, but text, so that what a
  // schema-aware editor says of the file is what this reader says.
  std::optional<std::string> description(const yaml::Node& node, const std::string& where) {
    const yaml::Node* text = node.find("description");
    if (text == nullptr) return std::nullopt;
    if (!text->is_scalar()) {
      error(*text, "RG301", "the description of " + where + " must be text");
      return std::nullopt;
    }
    return text->scalar;
  }

  static std::string join(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
    return out;
  }

  // Reads the one source key (header / payload / record) of mapping `node`.
  bool read_source(const yaml::Node& node, const std::string& what, ValueSource* source) {
    int found = 0;
    bool ok = true;
    for (const auto& [key, value] : node.entries) {
      const std::string& k = key.scalar;
      if (std::find(kMappingSourceKeys.begin(), kMappingSourceKeys.end(), k) ==
          kMappingSourceKeys.end()) {
        continue;
      }
      ++found;
      if (!value.is_scalar()) {
        error(value, "RG304", "the " + k + " of " + what + " must be a scalar");
        ok = false;
        continue;
      }
      source->name = value.scalar;
      if (k == "constant") {
        source->kind = SourceKind::kConstant;
      } else if (k == "queue_attribute") {
        source->kind = SourceKind::kConstant;
        source->constant_from = value.scalar;
        ok = queue_attribute(value, what, &source->name) && ok;
      } else if (k == "header") {
        source->kind = SourceKind::kHeader;
        if (value.scalar.empty()) {
          error(value, "RG304", "empty header name for " + what);
          ok = false;
        }
      } else if (k == "payload") {
        source->kind = SourceKind::kPayload;
        if (!parse_pointer(value.scalar, &source->pointer)) {
          error(value, "RG304", "bad JSON pointer '" + value.scalar + "' for " + what,
                "a pointer is \"\" or starts with '/', e.g. /order/idempotency_key; "
                "write ~1 for '/' and ~0 for '~'");
          ok = false;
        }
      } else {
        source->kind = SourceKind::kRecord;
        const std::vector<std::string>& kParts = kRecordPartNames;
        const auto it = std::find(kParts.begin(), kParts.end(), value.scalar);
        if (it == kParts.end()) {
          const std::string suggestion = closest_match(value.scalar, kParts);
          error(value, "RG304", "unknown record part '" + value.scalar + "' for " + what,
                suggestion.empty() ? "one of: " + join(kParts)
                                   : "did you mean '" + suggestion + "'?");
          ok = false;
        } else {
          source->part = static_cast<RecordPart>(it - kParts.begin());
        }
      }
    }
    if (found != 1) {
      error(node, "RG304", what + (found == 0 ? " has no source" : " has more than one source"),
            "give exactly one of header: NAME, payload: /json/pointer, record: PART, constant: "
            "VALUE, queue_attribute: NAME");
      return false;
    }
    if (const yaml::Node* decode = node.find("decode")) {
      const std::vector<std::string>& kDecodings = kDecodingNames;
      const auto it = decode->is_scalar()
                          ? std::find(kDecodings.begin(), kDecodings.end(), decode->scalar)
                          : kDecodings.end();
      if (it == kDecodings.end()) {
        error(*decode, "RG304", "unknown decode for " + what, "one of: " + join(kDecodings));
        ok = false;
      } else if (source->kind == SourceKind::kRecord || source->kind == SourceKind::kConstant) {
        error(*decode, "RG304",
              "decode applies to a header or a payload value, not to " + what + "'s " +
                  (source->kind == SourceKind::kRecord ? "record part" : "constant"));
        ok = false;
      } else {
        source->decoding = static_cast<Decoding>(1 + (it - kDecodings.begin()));
      }
    }
    if (const yaml::Node* occurrence = node.find("occurrence")) {
      const auto word =
          occurrence->is_scalar()
              ? std::find(kOccurrenceNames.begin(), kOccurrenceNames.end(), occurrence->scalar)
              : kOccurrenceNames.end();
      if (word == kOccurrenceNames.end()) {
        error(*occurrence, "RG304", "occurrence of " + what + " must be first, last or count",
              "last: the newest of a header the producer appends (Spring); first: where a "
              "framework prepends; count: how many times it occurs; leave it out to refuse a "
              "repeated header");
        ok = false;
      } else if (source->kind != SourceKind::kHeader) {
        error(*occurrence, "RG304", "occurrence applies only to a header source");
        ok = false;
      } else {
        source->occurrence = static_cast<Occurrence>(1 + (word - kOccurrenceNames.begin()));
      }
    }
    // Spring Kafka writes these headers as big-endian binary: read as text, a lone byte 0x33
    // would be the digit 3. Only be-int reads them.
    if (ok && source->kind == SourceKind::kHeader && source->decoding != Decoding::kBeInt &&
        is_spring_binary_header(source->name)) {
      error(node, "RG305",
            "header '" + source->name + "' is a big-endian binary integer in Spring Kafka, so " +
                what + " must say decode: be-int",
            "add decode: be-int (retry_topic-attempts is 1 byte in Spring 2.7.0-2.7.8, 4 bytes "
            "since; partition 4, offset and timestamp 8)");
      ok = false;
    }
    // Kafka Connect writes its error context as UTF-8 text (partition and offset in decimal).
    if (ok && source->kind == SourceKind::kHeader && source->decoding == Decoding::kBeInt &&
        source->name.starts_with("__connect.errors.")) {
      error(node, "RG305",
            "header '" + source->name + "' is UTF-8 text in Kafka Connect, so " + what +
                " must not say decode: be-int",
            "use decode: decimal for __connect.errors.partition and __connect.errors.offset");
      ok = false;
    }
    return ok;
  }

  // Reads the top-level `queue_attributes: FILE` (relative to the mapping file): the output of
  // `aws sqs get-queue-attributes --attribute-names All`, {"Attributes": {"NAME": "text", ...}}.
  void read_queue_attributes(const yaml::Node& node) {
    queue_attributes_node_ = &node;
    if (!node.is_scalar() || node.scalar.empty()) {
      error(node, "RG301", "queue_attributes must be a file name",
            "the output of aws sqs get-queue-attributes --attribute-names All, relative to the "
            "mapping file");
      return;
    }
    const size_t slash = path_.rfind('/');
    const std::string file = node.scalar[0] == '/' || slash == std::string::npos
                                 ? node.scalar
                                 : path_.substr(0, slash + 1) + node.scalar;
    std::ifstream in(file, std::ios::binary);
    std::string text;
    if (in) {
      std::istreambuf_iterator<char> it(in), end;
      for (; it != end && text.size() <= kMaxMappingBytes; ++it) text.push_back(*it);
    }
    if (!in.is_open() || text.size() > kMaxMappingBytes) {
      error(node, "RG301",
            "cannot read the queue attributes file '" + node.scalar + "'" +
                (in.is_open() ? " (over 1 MiB)" : ""));
      return;
    }
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (scan_json_shape(text, kMaxJsonDepth) != JsonShape::kOk || !doc.is_object() ||
        !doc.contains("Attributes") || !doc["Attributes"].is_object()) {
      error(node, "RG301", "'" + node.scalar + "' is not aws sqs get-queue-attributes output",
            "expected a JSON object {\"Attributes\": {\"RedrivePolicy\": \"...\", ...}}");
      return;
    }
    queue_attributes_ = std::move(doc["Attributes"]);
  }

  // The text of `queue_attribute: NAME` or `NAME.KEY` (KEY in the attribute's JSON text, as in
  // RedrivePolicy.maxReceiveCount) in the queue attributes file; false (reported) when it has none.
  bool queue_attribute(const yaml::Node& value, const std::string& what, std::string* text) {
    if (queue_attributes_node_ == nullptr) {
      error(value, "RG304", what + " reads a queue attribute, but the mapping names no file",
            "add queue_attributes: FILE at the top (aws sqs get-queue-attributes output)");
      return false;
    }
    if (!queue_attributes_.is_object()) return false;  // the file's problem is reported
    const size_t dot = value.scalar.find('.');
    const std::string name = value.scalar.substr(0, dot);
    const auto attribute = queue_attributes_.find(name);
    if (attribute == queue_attributes_.end() || !attribute->is_string()) {
      error(value, "RG304",
            "the queue attributes file has no attribute '" + name + "' (a string) for " + what);
      return false;
    }
    const std::string& attribute_text = attribute->get_ref<const std::string&>();
    if (dot == std::string::npos) {
      *text = attribute_text;
      return true;
    }
    const std::string key = value.scalar.substr(dot + 1);
    const nlohmann::json inner =
        scan_json_shape(attribute_text, kMaxJsonDepth) == JsonShape::kOk
            ? nlohmann::json::parse(attribute_text, nullptr, /*allow_exceptions=*/false)
            : nlohmann::json();
    const auto member = inner.is_object() ? inner.find(key) : inner.end();
    if (!inner.is_object() || member == inner.end() ||
        !(member->is_string() || member->is_number_integer())) {
      error(value, "RG304",
            "queue attribute '" + name + "' has no key '" + key +
                "' (a string or an integer) for " + what,
            "RedrivePolicy is JSON text: {\"deadLetterTargetArn\": ..., \"maxReceiveCount\": ...}");
      return false;
    }
    *text = member->is_string() ? member->get<std::string>() : member->dump();
    return true;
  }

  static bool is_spring_binary_header(const std::string& name) {
    static const std::vector<std::string> kBinary = {
        "kafka_dlt-original-partition",  "kafka_dlt-original-offset",
        "kafka_dlt-original-timestamp",  "kafka_original-partition",
        "kafka_original-offset",         "kafka_original-timestamp",
        "retry_topic-attempts",          "retry_topic-backoff-timestamp",
        "retry_topic-original-timestamp"};
    return std::find(kBinary.begin(), kBinary.end(), name) != kBinary.end();
  }

  static bool parse_pointer(const std::string& text, std::vector<std::string>* tokens) {
    tokens->clear();
    if (text.empty()) return true;
    if (text[0] != '/') return false;
    std::string token;
    for (size_t i = 1; i <= text.size(); ++i) {
      if (i == text.size() || text[i] == '/') {
        tokens->push_back(token);
        token.clear();
      } else if (text[i] == '~') {
        if (i + 1 >= text.size() || (text[i + 1] != '0' && text[i + 1] != '1')) return false;
        token.push_back(text[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        token.push_back(text[i]);
      }
    }
    return true;
  }

  // A scalar that converts to `type` (for map targets and defaults).
  bool check_value(const yaml::Node& node, FieldType type, const std::string& what) {
    if (!node.is_scalar()) {
      error(node, "RG305", what + " must be a scalar");
      return false;
    }
    int64_t i = 0;
    bool b = false;
    if (type == FieldType::kInt && (node.quoted || !parse_int64_strict(node.scalar, &i))) {
      error(node, "RG305", what + " must be an integer, not '" + node.scalar + "'");
      return false;
    }
    if (type == FieldType::kBool && (node.quoted || !parse_bool_strict(node.scalar, &b))) {
      error(node, "RG305", what + " must be true or false, not '" + node.scalar + "'");
      return false;
    }
    return true;
  }

  void read_input(const yaml::Node& key, const yaml::Node& body, Mapping* mapping) {
    const std::string& name = key.scalar;
    const uint32_t field = table_.field_index(name);
    if (field == Table::kNoField) {
      std::vector<std::string> names;
      for (uint32_t i = 0; i < table_.field_count(); ++i) {
        names.emplace_back(table_.field(i).name);
      }
      const std::string suggestion = closest_match(name, names);
      error(key, "RG302",
            "'" + name + "' is not an input of policy '" + std::string(table_.policy_id()) + "'",
            suggestion.empty() ? "inputs: " + join(names) : "did you mean '" + suggestion + "'?");
      return;
    }
    if (table_.field_derived(field)) {
      // Computed from two other inputs after validation, never read (as for letters): a source
      // here would be ignored at best, and a missing one would make every record invalid.
      const StructureField& d = derivation_structure().fields.at(field);
      const std::string lhs(table_.field(d.derived_lhs).name);
      const std::string rhs(table_.field(d.derived_rhs).name);
      error(key, "RG306", "input '" + name + "' is derived; it is computed, never read",
            "remove it; derived inputs are computed from " + lhs + " and " + rhs + " (" + name +
                " = " + lhs + " " + derived_op_symbol(d.derived_op) + " " + rhs + ")");
      return;
    }
    if (table_.field(field).operator_only) {
      // Only an operator sets it (policy `source: operator`): a broker record is no operator.
      error(key, "RG307", "input '" + name + "' is set only by an operator, never from a record",
            "remove it; it stays unset in decide, so the policy's handling of an absent value "
            "applies (review --confirm sets it)");
      return;
    }
    if (table_.field(field).source == FieldSource::kRecord) {
      // Only the durable operation record supplies it (policy `source: record`); a broker
      // record is the dead-lettered message, whose copy of the fact proves nothing.
      error(key, "RG311",
            "input '" + name +
                "' is read only from the operation record (policy 'source: record'), never from "
                "a broker record",
            "remove it; it stays unset in decide, so the policy's handling of an absent (or, "
            "when required, missing) value applies (review reads it from the --record file)");
      return;
    }
    if (!body.is_mapping()) {
      error(body, "RG301", "the mapping of input '" + name + "' must be a mapping",
            "e.g. " + name + ": {header: NAME}");
      return;
    }
    check_keys(body, kMappingInputKeys, "the mapping of input '" + name + "'");
    const FieldInfo info = table_.field(field);
    FieldMapping out;
    out.input = name;
    out.field = field;
    out.type = info.type;
    out.description = description(body, "the mapping of input '" + name + "'");
    if (!read_source(body, "input '" + name + "'", &out.source)) return;
    for (const std::string& key : kMappingSourceKeys) {
      if (const yaml::Node* where = body.find(key)) out.source_span = where->span;
    }
    if (out.source.kind == SourceKind::kConstant && body.find("map") == nullptr) {
      // Every record would be invalid for it: say so once, here.
      int64_t i = 0;
      bool b = false;
      const yaml::Node* where = body.find("constant");
      if (where == nullptr) where = body.find("queue_attribute");
      if ((info.type == FieldType::kInt && !parse_int64_strict(out.source.name, &i)) ||
          (info.type == FieldType::kBool && !parse_bool_strict(out.source.name, &b))) {
        error(*where, "RG305",
              "the constant '" + out.source.name + "' of input '" + name + "' is not " +
                  (info.type == FieldType::kInt ? "an integer" : "true or false"));
        return;
      }
    }
    if (out.source.occurrence == Occurrence::kCount && info.type != FieldType::kInt) {
      error(*body.find("occurrence"), "RG305",
            "occurrence: count gives an integer, but input '" + name + "' is " +
                field_type_name(info.type) + " in the policy");
      return;
    }
    if (const yaml::Node* type = body.find("type")) {
      if (!type->is_scalar() || type->scalar != field_type_name(info.type)) {
        error(*type, "RG305",
              "input '" + name + "' is " + field_type_name(info.type) + " in the policy, not " +
                  (type->is_scalar() ? "'" + type->scalar + "'" : "this"),
              "fix the mapping or the policy so that they agree");
      }
    }
    if (const yaml::Node* optional = body.find("optional")) {
      if (!optional->is_plain_bool()) {
        error(*optional, "RG305", "optional must be true or false");
      } else {
        out.optional = optional->scalar == "true";
      }
    }
    if (const yaml::Node* fallback = body.find("default")) {
      if (check_value(*fallback, info.type, "the default of input '" + name + "'")) {
        out.default_text = fallback->scalar;
        out.default_span = fallback->span;
      }
    }
    if (const yaml::Node* acknowledge = body.find("acknowledge")) {
      // One spelling, so that a review can grep for it; anything else is refused, not ignored.
      if (!acknowledge->is_scalar() || acknowledge->scalar != kAcknowledgeOpensCreate) {
        error(*acknowledge, "RG305",
              "acknowledge of input '" + name + "' must be " + kAcknowledgeOpensCreate,
              std::string("acknowledge: ") + kAcknowledgeOpensCreate +
                  " accepts a default that can open a create verb (RG309), once reviewed");
      } else {
        out.acknowledged = true;
        out.acknowledge_span = acknowledge->span;
      }
    }
    if (const yaml::Node* map = body.find("map")) {
      if (!map->is_mapping() || map->entries.empty()) {
        error(*map, "RG305", "the map of input '" + name + "' must be a non-empty mapping",
              "e.g. map: {java.net.SocketTimeoutException: timeout}");
      } else {
        out.has_map = true;
        for (const auto& [from, to] : map->entries) {
          if (check_value(to, info.type,
                          "map target '" + from.scalar + "' of input '" + name + "'")) {
            out.map.emplace(from.scalar, to.scalar);
          }
        }
      }
    }
    if (out.source.kind == SourceKind::kPayload) mapping->uses_payload = true;
    mapping->fields.push_back(std::move(out));
  }

  void read_metadata(const yaml::Node& node, const char* name, std::optional<ValueSource>* out) {
    if (!node.is_mapping()) {
      error(node, "RG301", std::string(name) + " must be a mapping",
            std::string("e.g. ") + name + ": {record: coordinates}");
      return;
    }
    check_keys(node, kMappingMetadataKeys, name);
    ValueSource source;
    if (read_source(node, name, &source)) *out = source;
  }

  void read(const yaml::Node& root, Mapping* mapping) {
    if (!root.is_mapping()) {
      error(root, "RG301", "a mapping file must be a YAML mapping with an inputs: section");
      return;
    }
    check_keys(root, kMappingFileKeys, "the mapping file");
    mapping->description = description(root, "the mapping file");
    if (const yaml::Node* node = root.find("queue_attributes")) {
      read_queue_attributes(*node);
      if (node->is_scalar()) mapping->queue_attributes = node->scalar;
    }
    if (const yaml::Node* format = root.find("format")) {
      if (!format->is_scalar() || !is_mapping_format(format->scalar)) {
        error(*format, "RG301", "unsupported format", "one of: " + mapping_format_names());
      } else {
        mapping->format = format->scalar;
      }
    }
    if (const yaml::Node* node = root.find("message_id")) {
      read_metadata(*node, "message_id", &mapping->message_id);
    }
    if (const yaml::Node* node = root.find("body_hash")) {
      read_metadata(*node, "body_hash", &mapping->body_hash);
    }
    const yaml::Node* inputs = root.find("inputs");
    const yaml::Node* inputs_key = &root;  // where RG303 points: the inputs: key itself
    for (const auto& entry : root.entries) {
      if (entry.first.scalar == "inputs") inputs_key = &entry.first;
    }
    if (inputs == nullptr || !inputs->is_mapping()) {
      error(inputs ? *inputs : root, "RG301", "the mapping file needs an inputs: mapping",
            "map every policy input, e.g. inputs: {topic: {header: kafka_dlt-original-topic}}");
      return;
    }
    for (const auto& [key, body] : inputs->entries) read_input(key, body, mapping);
    for (uint32_t i = 0; i < table_.field_count(); ++i) {
      const bool mapped = std::any_of(mapping->fields.begin(), mapping->fields.end(),
                                      [&](const FieldMapping& f) { return f.field == i; });
      // Derived inputs are computed, operator-only ones set by an operator, record-only ones read
      // from the operation record: none is mapped.
      if (!mapped && !table_.field_derived(i) && table_.field(i).source == FieldSource::kLetter) {
        const FieldInfo info = table_.field(i);
        bool named = false;  // named but broken: already reported
        for (const auto& entry : inputs->entries) named = named || entry.first.scalar == info.name;
        if (!named) {
          error(*inputs_key, "RG303", "policy input '" + std::string(info.name) + "' is not mapped",
                "every input needs a source; use optional: true when the record may lack it");
        }
      }
    }
    std::sort(mapping->fields.begin(), mapping->fields.end(),
              [](const FieldMapping& a, const FieldMapping& b) { return a.field < b.field; });
  }

  std::vector<Diagnostic> take() { return std::move(diagnostics_); }

 private:
  // The table's stored structure, read once and only when a derived input needs describing.
  const Structure& derivation_structure() {
    if (!structure_cache_) structure_cache_ = structure(table_);
    return *structure_cache_;
  }
  std::optional<Structure> structure_cache_;

  const std::string& path_;
  const Table& table_;
  std::vector<Diagnostic> diagnostics_;
  const yaml::Node* queue_attributes_node_ = nullptr;  // `queue_attributes:`, when given
  nlohmann::json queue_attributes_;                    // its file's Attributes object
};

}  // namespace

const char* decoding_name(Decoding decoding) {
  switch (decoding) {
    case Decoding::kText:
      return "text";
    case Decoding::kUtf8:
      return "utf8";
    case Decoding::kBeInt:
      return "be-int";
    case Decoding::kDecimal:
      return "decimal";
    case Decoding::kBase64:
      return "base64";
    case Decoding::kJson:
      return "json";
  }
  return "?";
}

std::string ValueSource::describe() const {
  switch (kind) {
    case SourceKind::kHeader:
      return "header '" + name + "'";
    case SourceKind::kPayload:
      return "payload " + (name.empty() ? std::string("(whole)") : name);
    case SourceKind::kRecord:
      return "record " + name;
    case SourceKind::kConstant:
      return constant_from.empty() ? "constant" : "queue attribute '" + constant_from + "'";
  }
  return name;
}

bool parse_int64_strict(std::string_view text, int64_t* value) {
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) i = 1;
  if (i >= text.size() || text.size() - i > 19) return false;
  uint64_t magnitude = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    magnitude = magnitude * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (magnitude > limit) return false;
  *value = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

bool parse_bool_strict(std::string_view text, bool* value) {
  if (text == "true" || text == "false") {
    *value = text == "true";
    return true;
  }
  return false;
}

LoadedMapping parse_mapping(std::string_view text, const std::string& path, const Table& table) {
  LoadedMapping out;
  out.source_text = std::string(text);
  yaml::Document document = yaml::parse(text, path);
  // Asked before the move below: a moved-from list has no errors, and the checker then read the
  // empty root of a file the YAML reader had stopped on (an anchor got RG301 beside RG003).
  const bool readable = document.ok();
  out.diagnostics = std::move(document.diagnostics);
  if (readable) {
    Checker checker(path, table);
    checker.read(document.root, &out.mapping);
    for (auto& d : checker.take()) out.diagnostics.push_back(std::move(d));
  }
  sort_diagnostics(out.diagnostics);
  return out;
}

}  // namespace replaygate::inputs
