// The JSON Schemas in schemas/ list exactly the keys and words replaygate's readers accept: a key
// added to a reader and not to its schema (or the reverse) fails here. The readers' lists are the
// ones they check against (compiler/syntax/policy_keys.h, inputs/mapping.h, checks/case_file.h,
// checks/proposal_check.h); tests/scripts/schemas.py validates the readers' exports against the
// schemas, so together they keep the schemas in step with the parsers.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "checks/case_file.h"
#include "checks/proposal_check.h"
#include "compiler/ir.h"
#include "compiler/syntax/policy_keys.h"
#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "tests/support/paths.h"

namespace replaygate {
namespace {

using nlohmann::json;

const std::string kSourceDir = RG_SOURCE_DIR;

json load_schema(const std::string& name) {
  std::ifstream in(kSourceDir + "/schemas/" + name);
  EXPECT_TRUE(in) << "cannot read schemas/" << name;
  return json::parse(std::string(std::istreambuf_iterator<char>(in), {}), nullptr, false);
}

std::set<std::string> as_set(const std::vector<std::string>& words) {
  return {words.begin(), words.end()};
}

std::set<std::string> keys_at(const json& schema, const std::string& pointer) {
  const json::json_pointer at(pointer);
  std::set<std::string> keys;
  if (!schema.contains(at)) {
    ADD_FAILURE() << "the schema has nothing at " << pointer;
    return keys;
  }
  for (const auto& [key, value] : schema.at(at).items()) keys.insert(key);
  return keys;
}

std::set<std::string> enum_at(const json& schema, const std::string& pointer) {
  const json::json_pointer at(pointer);
  std::set<std::string> words;
  if (!schema.contains(at) || !schema.at(at).is_array()) {
    ADD_FAILURE() << "the schema has no enum at " << pointer;
    return words;
  }
  for (const json& word : schema.at(at)) words.insert(word.get<std::string>());
  return words;
}

// `key` as one reference token of a JSON pointer (RFC 6901: ~ as ~0, / as ~1).
std::string escaped(const std::string& key) {
  std::string out;
  for (char c : key)
    out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

// Every `properties` object in `schema` (outside examples, enums and consts), by JSON pointer,
// except the helpers that only name a property for a `required` (all their subschemas `true`).
std::set<std::string> properties_objects(const json& node, const std::string& pointer = "") {
  std::set<std::string> out;
  if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) {
      const std::set<std::string> inner =
          properties_objects(node[i], pointer + "/" + std::to_string(i));
      out.insert(inner.begin(), inner.end());
    }
    return out;
  }
  if (!node.is_object()) return out;
  for (const auto& [key, value] : node.items()) {
    if (key == "examples" || key == "enum" || key == "const" || key == "default") continue;
    const std::string here = pointer + "/" + escaped(key);
    if (key == "properties" && value.is_object()) {
      bool helper = true;
      for (const auto& [name, sub] : value.items()) helper = helper && sub == json(true);
      if (!helper) out.insert(here);
      // The subschemas of the properties are schemas again (a property named "properties" is
      // not a keyword there).
      for (const auto& [name, sub] : value.items()) {
        const std::set<std::string> inner = properties_objects(sub, here + "/" + escaped(name));
        out.insert(inner.begin(), inner.end());
      }
      continue;
    }
    const std::set<std::string> inner = properties_objects(value, here);
    out.insert(inner.begin(), inner.end());
  }
  return out;
}

// Asserts that `checked` (the pointers this test compares with a reader's list) covers every
// `properties` object of the schema, and that each of those objects forbids other keys: a new
// mapping in a schema cannot escape the comparison, and no object lets an unknown key through
// where the reader refuses it.
// `open` names the objects whose other keys are data (a proposal entry's table key values), not
// keys a reader refuses.
void expect_every_object_checked(const json& schema, const std::string& name,
                                 const std::set<std::string>& checked,
                                 const std::set<std::string>& open = {}) {
  for (const std::string& pointer : properties_objects(schema)) {
    EXPECT_TRUE(checked.count(pointer) > 0)
        << name << pointer << " lists keys that no reader list is compared with: add the reader's "
        << "list to tests/tools/schema_keys_test.cc";
    const json::json_pointer owner(pointer.substr(0, pointer.rfind('/')));
    const json& object = pointer.rfind('/') == 0 ? schema : schema.at(owner);
    if (open.count(pointer) > 0) {
      EXPECT_TRUE(object.at("additionalProperties").is_object()) << name << pointer;
      continue;
    }
    EXPECT_EQ(object.value("additionalProperties", json(true)), json(false))
        << name << pointer << ": the reader refuses other keys (RGx01), so the schema must too";
  }
}

TEST(SchemaKeys, PolicySchemaListsExactlyTheKeysTheYamlFrontEndAccepts) {
  const json schema = load_schema("policy.schema.json");
  ASSERT_FALSE(schema.is_discarded());
  const std::map<std::string, const std::vector<std::string>*> places = {
      {"/properties", &policy_keys::kTop},
      {"/definitions/input/properties", &policy_keys::kInput},
      {"/definitions/classify/properties", &policy_keys::kClassify},
      {"/definitions/classify_row/properties", &policy_keys::kClassifyRow},
      {"/definitions/verb/properties", &policy_keys::kVerb},
      {"/definitions/guard/properties", &policy_keys::kGuard},
      {"/definitions/table/properties", &policy_keys::kTable},
      {"/definitions/row/oneOf/1/properties", &policy_keys::kRow},
      {"/definitions/invariant/properties", &policy_keys::kInvariant},
      {"/definitions/require/properties", &policy_keys::kRequire},
      {"/definitions/matcher/anyOf/2/properties", &policy_keys::kConditionOps},
      {"/definitions/derived/properties", &policy_keys::kDerivedOps},
  };
  std::set<std::string> checked;
  for (const auto& [pointer, keys] : places) {
    EXPECT_EQ(keys_at(schema, pointer), as_set(*keys)) << "schemas/policy.schema.json#" << pointer;
    checked.insert(pointer);
  }
  expect_every_object_checked(schema, "schemas/policy.schema.json#", checked);
  EXPECT_EQ(enum_at(schema, "/definitions/input/properties/type/enum"),
            as_set(policy_keys::kTypes));
  EXPECT_EQ(enum_at(schema, "/definitions/input/properties/source/enum"),
            as_set(policy_keys::kSources));
  EXPECT_EQ(enum_at(schema, "/definitions/verb/properties/effect/enum"),
            as_set(policy_keys::kEffects));
  EXPECT_EQ(enum_at(schema, "/definitions/effect/enum"), as_set(policy_keys::kEffects));
}

// The words the checker accepts are the on-disk codes' names (runtime/codes.h, compiler/ir.h): a
// new type, effect, operator, source or requirement there must reach the lists, and so the schema.
TEST(SchemaKeys, PolicyWordListsAreTheCodesNames) {
  std::vector<std::string> types, effects, ops, sources, requirements;
  for (uint32_t t = 0; t < kFieldTypeCount; ++t) {
    types.emplace_back(field_type_name(static_cast<FieldType>(t)));
  }
  for (uint32_t e = 0; e < kEffectCount; ++e) {
    effects.emplace_back(effect_name(static_cast<Effect>(e)));
  }
  for (uint32_t op = 0; op <= static_cast<uint32_t>(Op::kGe); ++op)
    ops.emplace_back(op_code_name(op));
  for (ir::InputSource s :
       {ir::InputSource::kLetter, ir::InputSource::kOperator, ir::InputSource::kRecord}) {
    sources.emplace_back(ir::input_source_name(s));
  }
  for (ir::InvariantOp op : {ir::InvariantOp::kVerbIn, ir::InvariantOp::kVerbNotIn,
                             ir::InvariantOp::kEffectAtMost, ir::InvariantOp::kEffectNot}) {
    requirements.emplace_back(ir::invariant_op_name(op));
  }
  EXPECT_EQ(policy_keys::kTypes, types);
  EXPECT_EQ(policy_keys::kEffects, effects);
  EXPECT_EQ(policy_keys::kConditionOps, ops);
  EXPECT_EQ(policy_keys::kSources, sources);
  EXPECT_EQ(policy_keys::kRequire, requirements);
  for (const std::string& op : policy_keys::kDerivedOps) {
    EXPECT_TRUE(as_set(ops).count(op) > 0) << op;
  }
  for (const std::string& matcher : policy_keys::kClassifyMatchers) {
    EXPECT_TRUE(as_set(policy_keys::kClassifyRow).count(matcher) > 0) << matcher;
  }
}

TEST(SchemaKeys, CasesSchemaListsExactlyTheKeysTheCaseReaderAccepts) {
  const json schema = load_schema("cases.schema.json");
  ASSERT_FALSE(schema.is_discarded());
  const std::map<std::string, const std::vector<std::string>*> places = {
      {"/properties", &checks::kCaseFileKeys},
      {"/definitions/case/properties", &checks::kCaseKeys},
      {"/definitions/value/anyOf/1/properties", &checks::kExplicitJsonKeys},
  };
  std::set<std::string> checked;
  for (const auto& [pointer, keys] : places) {
    EXPECT_EQ(keys_at(schema, pointer), as_set(*keys)) << "schemas/cases.schema.json#" << pointer;
    checked.insert(pointer);
  }
  expect_every_object_checked(schema, "schemas/cases.schema.json#", checked);
}

TEST(SchemaKeys, MappingSchemaListsExactlyTheKeysTheMappingReaderAccepts) {
  const json schema = load_schema("mapping.schema.json");
  ASSERT_FALSE(schema.is_discarded());
  const std::map<std::string, const std::vector<std::string>*> places = {
      {"/properties", &inputs::kMappingFileKeys},
      {"/definitions/input/properties", &inputs::kMappingInputKeys},
      {"/definitions/metadata/properties", &inputs::kMappingMetadataKeys},
  };
  std::set<std::string> checked;
  for (const auto& [pointer, keys] : places) {
    EXPECT_EQ(keys_at(schema, pointer), as_set(*keys)) << "schemas/mapping.schema.json#" << pointer;
    checked.insert(pointer);
  }
  expect_every_object_checked(schema, "schemas/mapping.schema.json#", checked);
  EXPECT_EQ(enum_at(schema, "/definitions/record/enum"), as_set(inputs::kRecordPartNames));
  EXPECT_EQ(enum_at(schema, "/definitions/decode/enum"), as_set(inputs::kDecodingNames));
  EXPECT_EQ(enum_at(schema, "/definitions/occurrence/enum"), as_set(inputs::kOccurrenceNames));
  EXPECT_EQ(enum_at(schema, "/definitions/input/properties/type/enum"),
            as_set(policy_keys::kTypes));
  EXPECT_EQ(schema.at(json::json_pointer("/definitions/input/properties/acknowledge/const")),
            json(inputs::kAcknowledgeOpensCreate));
  std::set<std::string> formats;
  for (const inputs::InputFormat& f : inputs::input_formats()) {
    if (!f.mapping_format.empty()) formats.emplace(f.mapping_format);
  }
  EXPECT_EQ(enum_at(schema, "/properties/format/enum"), formats);
  // Exactly one source: each oneOf branch requires one source key, and they are all the keys.
  std::set<std::string> input_sources, metadata_sources;
  for (const json& branch : schema.at(json::json_pointer("/definitions/input/oneOf"))) {
    input_sources.insert(branch.at("required").at(0).get<std::string>());
  }
  for (const json& branch : schema.at(json::json_pointer("/definitions/metadata/oneOf"))) {
    metadata_sources.insert(branch.at("required").at(0).get<std::string>());
  }
  EXPECT_EQ(input_sources, as_set(inputs::kMappingSourceKeys));
  std::set<std::string> metadata_want;
  for (const std::string& k : inputs::kMappingSourceKeys) {
    if (as_set(inputs::kMappingMetadataKeys).count(k) > 0) metadata_want.insert(k);
  }
  EXPECT_EQ(metadata_sources, metadata_want);
}

TEST(SchemaKeys, ProposalSchemaListsExactlyTheEntryMembersProposalCheckAccepts) {
  const json schema = load_schema("proposal.schema.json");
  ASSERT_FALSE(schema.is_discarded());
  const std::set<std::string> entry(std::begin(checks::kProposalEntryKeys),
                                    std::end(checks::kProposalEntryKeys));
  EXPECT_EQ(keys_at(schema, "/items/properties"), entry);
  // The evidence is what `propose` writes and nothing reads (its keys are propose's:
  // tests/tools/propose_test.cc validates propose's output against this schema).
  // Every other member of an entry is a key value of the table (additionalProperties: its
  // types), which proposal check checks against the policy's table keys.
  expect_every_object_checked(schema, "schemas/proposal.schema.json#",
                              {"/items/properties", "/items/properties/evidence/properties"},
                              {"/items/properties"});
}

// The comparison above can fail: a schema that lost a key, or gained one, differs from the list.
TEST(SchemaKeys, ADriftedSchemaIsCaught) {
  json schema = load_schema("mapping.schema.json");
  ASSERT_FALSE(schema.is_discarded());
  schema["definitions"]["input"]["properties"].erase("acknowledge");
  EXPECT_NE(keys_at(schema, "/definitions/input/properties"), as_set(inputs::kMappingInputKeys));
  schema["definitions"]["input"]["properties"]["acknowledge"] = json::object();
  schema["definitions"]["input"]["properties"]["acknowledged"] = json::object();
  EXPECT_NE(keys_at(schema, "/definitions/input/properties"), as_set(inputs::kMappingInputKeys));
  EXPECT_EQ(properties_objects(schema).count("/definitions/input/properties"), 1u);
}

}  // namespace
}  // namespace replaygate
