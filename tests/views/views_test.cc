// views/: the matrix and the graph as text, from the policy alone (no CLI, no files). Their exact
// bytes are pinned by the CLI's goldens (tests/tools/review_cli_test.cc); these check what a
// caller other than the CLI relies on: errors as data and nothing printed.
#include <gtest/gtest.h>

#include <string>

#include "support/test_policies.h"
#include "views/graph.h"
#include "views/matrix.h"

namespace replaygate {
namespace {

TEST(ViewsMatrix, AnUnknownTableIsAnErrorWithASuggestionAndNoText) {
  const ir::CheckedPolicy checked = testing::reference_gate();
  views::MatrixOptions options;
  options.table_id = "known_failure";
  const views::MatrixResult r = views::render_matrix(checked.policy, options);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.error, "the policy has no table 'known_failure'; did you mean 'known_failures'?");
}

TEST(ViewsMatrix, HtmlAndSvgAreWholeDocumentsAndTheSameTwice) {
  const ir::CheckedPolicy checked = testing::reference_gate();
  views::MatrixOptions options;
  const views::MatrixResult html = views::render_matrix(checked.policy, options);
  EXPECT_EQ(html.error, "");
  EXPECT_EQ(html.text.rfind("<!DOCTYPE html>\n", 0), 0u);
  EXPECT_EQ(html.text, views::render_matrix(checked.policy, options).text);
  options.format = views::MatrixFormat::kSvg;
  const views::MatrixResult svg = views::render_matrix(checked.policy, options);
  EXPECT_EQ(svg.error, "");
  EXPECT_EQ(svg.text.rfind("<svg ", 0), 0u);
  EXPECT_EQ(svg.text.substr(svg.text.size() - 7), "</svg>\n");
}

TEST(ViewsGraph, OneVerbNodePerVerbAndOneRuleNodePerRule) {
  const ir::CheckedPolicy checked = testing::reference_gate();
  const views::GraphModel model = views::graph_from_policy(checked.policy);
  EXPECT_EQ(model.verbs.size(), checked.policy.verbs.size());
  EXPECT_EQ(model.rules.size(), checked.policy.rules.size());
  const std::string dot = views::render_dot(model);
  EXPECT_EQ(dot.rfind("digraph ", 0), 0u);
  for (size_t v = 0; v < model.verbs.size(); ++v) {
    EXPECT_NE(dot.find("  verb_" + std::to_string(v) + " [shape=ellipse"), std::string::npos);
  }
  EXPECT_NE(dot.find(" -> default [label="), std::string::npos);
}

}  // namespace
}  // namespace replaygate
