// A mapping file checked against the policy it maps for: its `default:` values (RG308-RG310) and
// the broker delivery counters a guard budgets on (RG312), docs/input-mapping.md. In: the mapping
// (inputs/mapping.h) or its text, the table; out: diagnostics, as data (callers render them).
//
//
// A `constant:` or `queue_attribute:` source is checked as a default that every record gets,
// whatever the message says (`already_committed: {constant: false}` is the same hole as a default
// false), with the same codes, at the constant's node.
//
// A default turns "the record does not say" into a value the policy then trusts: `attempts:
// {default: 0}` makes a record without a counter look like a first attempt. Without the default a
// missing required input is invalid input (the policy default verb, effect none) and a missing
// optional one is absent. A default *opens a create verb* when some record without the value gets
// a verb of effect create with the default and a verb of another effect without it, i.e. when some
// assignment of the other inputs exists for which
//     verb(other inputs, input = default) has effect create, and
//     verb(other inputs, input missing)   does not.
// This is decided exactly over the policy's decision regions (compiler/analysis/regions.h), on the
// policy lifted from the table (compiler/lift.h), with two refinements of what a record can carry:
// operator-only inputs are unset (decide never reads them) and a derived bool is free (the
// analysis' usual over-approximation: it may report a case whose derived value cannot occur, never
// miss one). When the table cannot be lifted or the region budget runs out, the default counts as
// opening a create verb (fail closed).
//
// Findings, one per defaulted input, at the `default:` (or `acknowledge:`) node:
//   RG309 error    the default opens a create verb and the input has no
//                  `acknowledge: default-opens-create`
//   RG308 warning  the default cannot open a create verb, but a rule reads the input (a guard
//                  condition, a table key, or a derived bool's operand): a record without it is
//                  decided as if it said the default
//   RG310 warning  `acknowledge: default-opens-create` on an input whose default cannot open a
//                  create verb (or that has no default): a stale acknowledgement would hide a
//                  later default that does
// An acknowledged default that opens a create verb gets no finding: it has been reviewed.
//
// Nothing prints. Thread-compatible (reads its arguments only).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "inputs/mapping.h"
#include "runtime/table.h"

namespace replaygate::checks {

using inputs::LoadedMapping;
using inputs::Mapping;

// The RG308-RG310 findings for `mapping` (checked against `table`, as parse_mapping() does),
// pointing into `path`. Empty when no input has a default or an acknowledgement (then the table
// is not even lifted).
std::vector<Diagnostic> check_mapping_defaults(const Mapping& mapping, const Table& table,
                                               const std::string& path);

// RG312, a warning: an input that reads a broker's own delivery counter (`record:
// delivery-count`, or a header or payload key a broker or its client writes as one: x-death,
// x-delivery-count, ApproximateReceiveCount, deliveryAttempt, DeliveryCount, retry_count,
// kafka_deliveryAttempt, retry_topic-attempts, ...) that a guard compares, directly or through a
// derived bool. A broker dead-letters a message only once its counter reached the queue's limit
// (and RabbitMQ's x-death count stays 1 across republish cycles), so as an attempt budget it holds
// every letter or never trips. Empty when no such input (then the table is not lifted).
std::vector<Diagnostic> check_delivery_counters(const Mapping& mapping, const Table& table,
                                                const std::string& path);

// parse_mapping() (inputs/mapping.h, RG301-RG307) of the mapping `text` read from `path`, then
// check_mapping_defaults() (RG308-RG310), sorted: every check of a mapping file, as lint
// --mapping, decide and explain run it (lint adds RG312), and as the language server can.
LoadedMapping check_mapping(std::string_view text, const std::string& path, const Table& table);

}  // namespace replaygate::checks
