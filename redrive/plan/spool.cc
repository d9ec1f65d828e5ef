// An external sort in bounded memory (spool.h).
#include "redrive/plan/spool.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <queue>
#include <tuple>
#include <utility>

namespace replaygate::plan {
namespace {

// Bytes a held pair costs besides its key and payload (two strings and a sequence number).
constexpr size_t kPairOverhead = 2 * sizeof(std::string) + sizeof(uint64_t);

bool put(std::FILE* f, const void* bytes, size_t n) { return std::fwrite(bytes, 1, n, f) == n; }

bool put_text(std::FILE* f, std::string_view text) {
  const uint32_t n = static_cast<uint32_t>(text.size());
  return put(f, &n, sizeof n) && put(f, text.data(), text.size());
}

// One run file read back a record at a time.
struct RunReader {
  std::FILE* file = nullptr;
  uint64_t left = 0;  // bytes not read yet: a damaged length never allocates past the file
  std::string key, payload;
  uint64_t seq = 0;
  ~RunReader() {
    if (file != nullptr) std::fclose(file);
  }
  bool open(const std::string& path) {
    file = std::fopen(path.c_str(), "rb");
    if (file == nullptr || std::fseek(file, 0, SEEK_END) != 0) return false;
    const long size = std::ftell(file);
    std::rewind(file);
    left = size < 0 ? 0 : static_cast<uint64_t>(size);
    return size >= 0;
  }
  // False at the end; *bad is set when the file is cut short or a length is past its end.
  bool next(bool* bad) {
    if (left == 0) return false;
    uint32_t n = 0;
    if (!fixed(&n, sizeof n) || !take(n, &key) || !fixed(&seq, sizeof seq) ||
        !fixed(&n, sizeof n) || !take(n, &payload)) {
      *bad = true;
      return false;
    }
    return true;
  }
  bool fixed(void* out, size_t n) {
    if (n > left || std::fread(out, 1, n, file) != n) return false;
    left -= n;
    return true;
  }
  bool take(uint32_t n, std::string* out) {
    if (n > left) return false;
    out->resize(n);
    left -= n;
    return n == 0 || std::fread(out->data(), 1, n, file) == n;
  }
};

}  // namespace

Spool::Spool(std::string path_prefix, size_t memory_budget)
    : prefix_(std::move(path_prefix)), budget_(memory_budget) {}

Spool::~Spool() {
  for (const std::string& run : runs_) std::remove(run.c_str());
}

bool Spool::add(std::string_view key, std::string_view payload) {
  pairs_.push_back({std::string(key), std::string(payload), seq_++});
  held_bytes_ += key.size() + payload.size() + kPairOverhead;
  return held_bytes_ < budget_ || spill();
}

bool Spool::spill() {
  std::sort(pairs_.begin(), pairs_.end(), [](const Pair& a, const Pair& b) {
    return std::tie(a.key, a.seq) < std::tie(b.key, b.seq);
  });
  const std::string path = prefix_ + ".run." + std::to_string(runs_.size());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    error_ = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  runs_.push_back(path);
  bool ok = true;
  for (const Pair& p : pairs_) {
    ok = ok && put_text(f, p.key) && put(f, &p.seq, sizeof p.seq) && put_text(f, p.payload);
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    error_ = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  pairs_.clear();
  pairs_.shrink_to_fit();
  held_bytes_ = 0;
  return true;
}

bool Spool::merge(const std::function<bool(std::string_view, std::string_view, uint64_t)>& each) {
  if (!pairs_.empty() && !spill()) return false;
  std::vector<std::unique_ptr<RunReader>> readers;
  // The heap holds the index of each reader with a record, smallest (key, seq) on top.
  auto later = [&](size_t a, size_t b) {
    return std::tie(readers[a]->key, readers[a]->seq) > std::tie(readers[b]->key, readers[b]->seq);
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  bool bad = false;
  for (const std::string& run : runs_) {
    auto r = std::make_unique<RunReader>();
    if (!r->open(run)) {
      error_ = "cannot read " + run + ": " + std::strerror(errno);
      return false;
    }
    readers.push_back(std::move(r));
    if (readers.back()->next(&bad)) heap.push(readers.size() - 1);
  }
  std::string key, first;
  uint64_t count = 0;
  while (!heap.empty() && !bad) {
    const size_t top = heap.top();
    heap.pop();
    RunReader& r = *readers[top];
    if (count > 0 && r.key != key) {
      if (!each(key, first, count)) return true;
      count = 0;
    }
    if (count == 0) {
      key = r.key;
      first = r.payload;
    }
    ++count;
    if (r.next(&bad)) heap.push(top);
  }
  if (bad) {
    error_ = "a spool run file of " + prefix_ + " is cut short";
    return false;
  }
  if (count > 0) each(key, first, count);
  return true;
}

LetterSet::LetterSet(const std::string& path_prefix, size_t memory_budget)
    : letters_(path_prefix + ".letters", memory_budget),
      replay_keys_(path_prefix + ".keys", memory_budget / 4) {}

bool LetterSet::add(const PlanLetter& letter) {
  if (!letters_.add(letter.identity, to_json(letter).dump())) {
    error_ = letters_.error();
    return false;
  }
  // One identity is one replay however many copies it has (write() counts identities per key).
  if (letter.decision.effect == "create" && letter.idempotency_key) {
    const std::string& key = *letter.idempotency_key;
    const uint32_t n = static_cast<uint32_t>(key.size());
    std::string both(reinterpret_cast<const char*>(&n), sizeof n);
    both += key;
    both += letter.identity;
    if (!replay_keys_.add(both, "")) {
      error_ = replay_keys_.error();
      return false;
    }
  }
  return true;
}

bool LetterSet::write(PlanWriter& writer,
                      const std::function<void(std::string_view, uint64_t)>& shared_key) {
  std::string why;
  const bool merged = letters_.merge([&](std::string_view, std::string_view first, uint64_t n) {
    PlanLetter l;
    const nlohmann::json parsed = nlohmann::json::parse(first, nullptr, false);
    why = parsed.is_discarded() ? "a spooled letter is not JSON (a damaged spool run file)"
                                : from_json(parsed, &l);
    if (!why.empty()) return false;
    l.count = static_cast<int64_t>(n);
    if (!writer.add(l)) {
      why = writer.error();
      return false;
    }
    return true;
  });
  if (!merged || !why.empty()) {
    error_ = merged ? why : letters_.error();
    return false;
  }
  // A spooled key is the idempotency key, length-prefixed, then the identity: the merge hands
  // out each (key, identity) once, grouped by key, so a key's group size is its replays.
  std::string key;
  uint64_t replays = 0;
  const bool keys_merged =
      replay_keys_.merge([&](std::string_view both, std::string_view, uint64_t) {
        uint32_t n = 0;
        std::memcpy(&n, both.data(), sizeof n);
        const std::string_view k = both.substr(sizeof n, n);
        if (replays > 0 && k != key) {
          if (replays > 1) shared_key(key, replays);
          replays = 0;
        }
        key = std::string(k);
        ++replays;
        return true;
      });
  if (keys_merged && replays > 1) shared_key(key, replays);
  if (!keys_merged) {
    error_ = replay_keys_.error();
    return false;
  }
  return true;
}

}  // namespace replaygate::plan
