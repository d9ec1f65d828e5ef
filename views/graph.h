// The decision structure of a policy or a frozen table as Graphviz DOT text, for reviewers:
// `replaygate graph` and, later, the web console. Running `dot` on it is the caller's business.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"
#include "runtime/table.h"

namespace replaygate::views {

struct GraphVerb {
  std::string name, effect, description;
};

struct GraphRule {
  bool is_table = false;
  std::string id;
  std::vector<std::string> conditions;  // guards
  uint32_t verb = 0;                    // guards
  std::vector<std::string> keys;        // tables
  std::vector<uint32_t> row_verbs;      // tables: per row
};

// What the picture shows, the same from either source.
struct GraphModel {
  std::string policy_id;
  int64_t revision = 0;
  std::vector<GraphVerb> verbs;
  uint32_t default_verb = 0;
  std::vector<GraphRule> rules;
};

// In: a compiled policy (its IR). Out: its rules, verbs and default.
GraphModel graph_from_policy(const ir::Policy& policy);
// In: a frozen table. Out: the same, from runtime/trace.h's outline().
GraphModel graph_from_table(const Table& table);

// In: a model. Out: deterministic DOT text (golden-tested). A `letter` start node; an edge
// "invalid input" from it to the default; the rules in evaluation order, each guard a box with
// its conditions (one per line) whose `true` edge goes to its verb and whose `false` edge goes to
// the next rule; each table a box with its keys and row count, one edge per verb its rows give
// (labelled with the row count) and a `no row` edge to the next rule; the default last. Verbs are
// ellipses filled by effect (none green, read blue, copy yellow, create red).
std::string render_dot(const GraphModel& model);

}  // namespace replaygate::views
