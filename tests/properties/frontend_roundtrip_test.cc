// The YAML front-end against the generator: a random valid policy, printed as YAML by to_yaml(),
// loads back without an error diagnostic to exactly the same IR, with a source span for every
// field, verb, rule, condition and row. Skipped while the front-end is a placeholder.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "compiler/compile.h"
#include "tests/properties/policy_gen.h"
#include "tests/support/diagnostics.h"

namespace replaygate::testing {
namespace {

bool front_end_available() {
  const LoadedPolicy probe = load_policy_text("policy: x\n", "probe.yaml");
  return !(probe.io_error && probe.io_message.find("not built yet") != std::string::npos);
}

bool spans_cover(const ir::SourceMap& source, const ir::Policy& p, uint32_t line_count) {
  auto ok = [&](const ir::Span& s) { return s.line >= 1 && s.line <= line_count; };
  if (source.fields.size() != p.fields.size() || source.verbs.size() != p.verbs.size() ||
      source.rules.size() != p.rules.size() || source.conditions.size() != p.rules.size() ||
      source.rows.size() != p.rules.size()) {
    return false;
  }
  for (const auto& s : source.fields) {
    if (!ok(s)) return false;
  }
  for (const auto& s : source.verbs) {
    if (!ok(s)) return false;
  }
  for (size_t r = 0; r < p.rules.size(); ++r) {
    if (!ok(source.rules[r])) return false;
    if (const auto* g = std::get_if<ir::Guard>(&p.rules[r])) {
      if (source.conditions[r].size() != g->conditions.size()) return false;
      for (const auto& s : source.conditions[r]) {
        if (!ok(s)) return false;
      }
    } else {
      if (source.rows[r].size() != std::get<ir::Table>(p.rules[r]).rows.size()) return false;
      for (const auto& s : source.rows[r]) {
        if (!ok(s)) return false;
      }
    }
  }
  return true;
}

TEST(FrontEndRoundTripTest, GeneratedYamlLoadsToTheSameIr) {
  if (!front_end_available()) GTEST_SKIP() << "the YAML front-end is not built yet";
  const bool ok = rc::check("YAML of a generated policy loads to the same IR", [] {
    with_shrink_budget([] {
      const ir::CheckedPolicy generated = *gen_policy();
      const std::string text = to_yaml(generated.policy);
      const LoadedPolicy loaded = load_policy_text(text, "gen.yaml");
      if (!loaded.policy) RC_FAIL("diagnostics:\n" + diagnostics_text(loaded) + "for:\n" + text);
      const ir::Policy& actual = loaded.policy->policy;
      if (!(actual == generated.policy)) {
        RC_FAIL("the front-end's IR differs; it prints as\n" + to_yaml(actual) + "for:\n" + text);
      }
      uint32_t lines = 0;
      for (char c : text) lines += c == '\n';
      RC_ASSERT(spans_cover(loaded.policy->source, actual, lines));
      RC_ASSERT(loaded.policy->source_base_name == std::string("gen.yaml"));
    });
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace replaygate::testing
