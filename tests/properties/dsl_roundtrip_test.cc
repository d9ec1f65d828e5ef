// The DSL front-end and printers against the generator: for random valid policies,
//   parse(print_dsl(ir)) == ir                       (the DSL says everything the IR holds)
//   fmt(fmt(x)) == fmt(x), and fmt keeps the IR       (the formatter is idempotent and harmless)
//   YAML -> DSL -> YAML keeps the decision digest     (convert is lossless for decisions)
// Some generated inputs are marked operator-only (`source: operator`), so the marker round-trips.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "compiler/syntax/print_dsl.h"
#include "compiler/syntax/print_yaml.h"
#include "runtime/table.h"
#include "tests/properties/policy_gen.h"
#include "tests/support/diagnostics.h"

namespace replaygate::testing {
namespace {

std::string decision_digest(const ir::CheckedPolicy& policy) {
  const std::vector<uint8_t> bytes = lower(policy);
  LoadStatus status;
  const auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  RC_ASSERT(table != nullptr);
  return table->decision_digest_hex();
}

// The generator never marks an input operator- or record-only (its oracles decide letters with
// every field set); these properties mark about one input in four, never a derived one.
ir::CheckedPolicy gen_marked_policy() {
  ir::CheckedPolicy generated = *gen_policy();
  for (ir::Field& field : generated.policy.fields) {
    if (field.derived) continue;
    switch (*rc::gen::inRange(0, 8)) {
      case 0:
        field.source = ir::InputSource::kOperator;
        break;
      case 1:
        field.source = ir::InputSource::kRecord;
        break;
      default:
        break;
    }
  }
  return generated;
}

TEST(DslRoundTripProperty, PrintedDslLoadsToTheSameIr) {
  const bool ok = rc::check("parse(print_dsl(ir)) == ir", [] {
    with_shrink_budget([] {
      const ir::CheckedPolicy generated = gen_marked_policy();
      const std::string text = print_dsl(generated.policy);
      const LoadedPolicy loaded = load_policy_text(text, "gen.policy");
      if (!loaded.policy) RC_FAIL("diagnostics:\n" + diagnostics_text(loaded) + "for:\n" + text);
      if (!(loaded.policy->policy == generated.policy)) {
        RC_FAIL("the DSL front-end's IR differs; it prints as\n" +
                print_dsl(loaded.policy->policy) + "for:\n" + text);
      }
    });
  });
  EXPECT_TRUE(ok);
}

TEST(DslRoundTripProperty, FmtIsIdempotentAndKeepsTheIr) {
  const bool ok = rc::check("fmt(fmt(x)) == fmt(x)", [] {
    with_shrink_budget([] {
      const ir::CheckedPolicy generated = gen_marked_policy();
      // A non-canonical source: comments, extra blanks, items on one line with ';', and a
      // table's rows spread over lines.
      std::string text = "# generated\n" + print_dsl(generated.policy);
      std::string messy;
      bool in_string = false, escaped = false;  // blanks inside strings are content
      for (size_t i = 0; i < text.size(); ++i) {
        if (in_string) {
          if (escaped) {
            escaped = false;
          } else if (text[i] == '\\') {
            escaped = true;
          } else if (text[i] == '"') {
            in_string = false;
          }
          messy += text[i];
          continue;
        }
        if (text[i] == '"') in_string = true;
        if (text[i] == ' ' && *rc::gen::inRange(0, 4) == 0) {
          messy += "  ";
        } else if (text[i] == '\n' && i + 1 < text.size() && text.compare(i + 1, 5, "verb ") == 0 &&
                   *rc::gen::inRange(0, 2) == 0) {
          messy += "; ";
        } else {
          messy += text[i];
        }
        if (text[i] == '\n' && *rc::gen::inRange(0, 6) == 0) messy += "# note\n";
      }
      const FormatResult once = format_dsl(messy, "gen.policy");
      if (!once.text) RC_FAIL("fmt failed on:\n" + messy);
      const FormatResult twice = format_dsl(*once.text, "gen.policy");
      RC_ASSERT(twice.text.has_value());
      RC_ASSERT(*twice.text == *once.text);
      const LoadedPolicy loaded = load_policy_text(*once.text, "gen.policy");
      if (!loaded.policy) RC_FAIL("diagnostics:\n" + diagnostics_text(loaded) + *once.text);
      RC_ASSERT(loaded.policy->policy == generated.policy);
    });
  });
  EXPECT_TRUE(ok);
}

TEST(DslRoundTripProperty, YamlToDslToYamlKeepsTheDecisionDigest) {
  const bool ok = rc::check("YAML -> DSL -> YAML keeps the decision digest", [] {
    with_shrink_budget([] {
      const ir::CheckedPolicy generated = gen_marked_policy();
      const std::string yaml = print_yaml(generated.policy);
      const LoadedPolicy from_yaml = load_policy_text(yaml, "gen.yaml");
      if (!from_yaml.policy) RC_FAIL("diagnostics:\n" + diagnostics_text(from_yaml) + yaml);
      const std::string dsl = print_dsl(from_yaml.policy->policy);
      const LoadedPolicy from_dsl = load_policy_text(dsl, "gen.policy");
      if (!from_dsl.policy) RC_FAIL("diagnostics:\n" + diagnostics_text(from_dsl) + dsl);
      const std::string yaml_again = print_yaml(from_dsl.policy->policy);
      const LoadedPolicy back = load_policy_text(yaml_again, "gen.yaml");
      if (!back.policy) RC_FAIL("diagnostics:\n" + diagnostics_text(back) + yaml_again);
      RC_ASSERT(yaml_again == yaml);
      RC_ASSERT(decision_digest(*back.policy) == decision_digest(*from_yaml.policy));
      RC_ASSERT(decision_digest(*from_dsl.policy) == decision_digest(*from_yaml.policy));
    });
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace replaygate::testing
