// A table reload under a running gate and its rule (reload.h).
#include "redrive/reload.h"

#include <utility>

namespace replaygate::redrive {

ReloadRule::ReloadRule(const Table& start, std::vector<std::string> action_specs, ActionMap actions)
    : policy_id_(start.policy_id()),
      action_specs_(std::move(action_specs)),
      actions_(std::move(actions)),
      default_verb_(start.default_verb()) {
  for (uint32_t v = 0; v < start.verb_count(); ++v) effects_.push_back(start.verb_effect(v));
}

std::string ReloadRule::refusal(const Table& next) const {
  if (next.policy_id() != policy_id_) {  // --policy: compiled, no trust options
    return "the new table is policy " + std::string(next.policy_id()) +
           ", and this gate runs policy " + policy_id_ + "; the old table keeps serving";
  }
  ActionMap next_actions = ActionMap::defaults(next);
  for (const std::string& spec : action_specs_) next_actions.set(next, spec);
  bool same = next_actions == actions_ && next.default_verb() == default_verb_;
  for (uint32_t v = 0; same && v < next.verb_count(); ++v) {
    same = v < effects_.size() && next.verb_effect(v) == effects_[v];
  }
  if (same) return "";
  return "the new table changes a verb's effect, the default verb or what a verb does "
         "(republish, park, hold); restart the gate to run it. The old table keeps serving";
}

std::string ReloadRule::reload(SharedTable& shared, std::unique_ptr<Table> next) const {
  if (const std::string why = refusal(*next); !why.empty()) return "reload refused: " + why;
  const std::string checksum = next->checksum_hex();
  const int64_t revision = next->revision();
  LoadStatus status;
  if (!shared.replace(std::move(next), &status)) {
    return "reload refused (" + status.message + "); the old table keeps serving";
  }
  return "reloaded the table (revision " + std::to_string(revision) + ", " + checksum + ")";
}

FileWatch::FileWatch(std::string path)
    : path_(std::move(path)), last_(std::chrono::steady_clock::now()) {
  ::stat(path_.c_str(), &seen_);
}

bool FileWatch::changed() {
  if (std::chrono::steady_clock::now() - last_ <= std::chrono::seconds(1)) return false;
  last_ = std::chrono::steady_clock::now();
  struct stat now {};
  // An in-place rewrite may keep the mtime (cp -p, touch -r): its size or its ctime, which no
  // user can set, still changes; a rename changes the inode.
  if (::stat(path_.c_str(), &now) != 0) return false;
  if (now.st_mtim.tv_sec == seen_.st_mtim.tv_sec && now.st_mtim.tv_nsec == seen_.st_mtim.tv_nsec &&
      now.st_ino == seen_.st_ino && now.st_size == seen_.st_size &&
      now.st_ctim.tv_sec == seen_.st_ctim.tv_sec && now.st_ctim.tv_nsec == seen_.st_ctim.tv_nsec) {
    return false;
  }
  seen_ = now;
  return true;
}

}  // namespace replaygate::redrive
