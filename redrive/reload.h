// A table reload under a running gate (SIGHUP or --watch), and its rule: a reload may change
// rules and reasons, never what a verb does. The action map is made once at start (ActionMap),
// so a new table whose verb changed its effect (replay_once made `none`), whose default verb
// changed, or whose map from the same --action specs differs would still be acted on with the old
// map: such a table, or one of another policy, is refused and the old table keeps serving.
//
// In: the table the gate started with, its --action specs and map; then each new table. Out: the
// line to print. Threads: one thread reloads; readers of the SharedTable go on meanwhile.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "redrive/redrive.h"
#include "runtime/reload.h"
#include "runtime/table.h"

namespace replaygate::redrive {

class ReloadRule {
 public:
  ReloadRule(const Table& start, std::vector<std::string> action_specs, ActionMap actions);
  // "" when `next` may replace the serving table, else why not (ends "the old table keeps
  // serving").
  std::string refusal(const Table& next) const;
  // Checks `next` and, when allowed, makes it the serving table. The message for the operator:
  // "reloaded the table (revision N, CHECKSUM)" or "reload refused...".
  std::string reload(SharedTable& shared, std::unique_ptr<Table> next) const;

 private:
  std::string policy_id_;
  std::vector<std::string> action_specs_;
  ActionMap actions_;
  uint32_t default_verb_ = 0;
  std::vector<Effect> effects_;
};

// --watch: whether a file changed since the last look, looked at most once a second.
class FileWatch {
 public:
  explicit FileWatch(std::string path);
  bool changed();

 private:
  std::string path_;
  struct stat seen_ {};
  std::chrono::steady_clock::time_point last_;
};

}  // namespace replaygate::redrive
