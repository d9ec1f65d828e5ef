// rgj_*: JSON Lines batches decided in one call (bindings/jsonl/replaygate_jsonl.h).
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bindings/jsonl/replaygate_jsonl.h"
#include "inputs/letters.h"
#include "pipeline/gate.h"
#include "pipeline/replay_guard.h"
#include "pipeline/stream.h"
#include "runtime/reload.h"
#include "runtime/verify/signed_table.h"

using replaygate::Input;
using replaygate::LoadStatus;
using replaygate::SharedTable;

namespace {

// The verbs of one rgj_decide_lines call: the stage every verdict of the stream goes to (after the
// replay guard, which holds nothing here: the gate has no key field and no budget).
class VerbStage final : public replaygate::pipeline::Stage {
 public:
  void start(uint32_t* verbs) {
    verbs_ = verbs;
    count_ = 0;
  }
  size_t count() const { return count_; }
  void add(const replaygate::Table&, const replaygate::pipeline::Verdict& verdict) override {
    verbs_[count_++] = verdict.verb;
  }
  bool commit() override { return true; }
  const std::string& error() const override { return error_; }

 private:
  uint32_t* verbs_ = nullptr;
  size_t count_ = 0;
  std::string error_;
};

// The decision lines are not wanted (the caller holds and acts on the verbs): dropped as they fill.
class DiscardSink final : public replaygate::pipeline::Sink {
 public:
  DiscardSink() : Sink(kBytes) {}
  replaygate::ByteBuffer& buffer() override { return buffer_; }
  bool flush() override {
    buffer_.clear();
    return true;
  }
  bool ok() const override { return true; }

 private:
  static constexpr size_t kBytes = 64 << 10;
  replaygate::ByteBuffer buffer_;
};

// What one rgj_decide_lines call needs besides the table: the strict reader (its simdjson parser
// sized for 1 MiB lines is the expensive part to build), a replay guard that never holds, the
// verb stage, the sink, and a padded copy of a line that sits too close to the end of the caller's
// buffer. Built once and reused by later calls (field names, types and indices are stable across
// reloads: SharedTable refuses a table whose fields differ).
struct Scratch {
  explicit Scratch(const replaygate::Table& table) : parser(table) {}
  replaygate::inputs::LetterParser parser;
  replaygate::pipeline::ReplayGuard guard{-1, 0, kGuardBytes};
  VerbStage verbs;
  DiscardSink sink;
  std::string line;
  static constexpr uint64_t kGuardBytes = 1 << 20;  // the smallest cap; no key is ever stored
};

}  // namespace

struct rgj_gate {
  std::unique_ptr<SharedTable> shared;
  std::vector<std::string> verbs;  // stable across reloads (SharedTable checks compatibility)
  std::mutex pool_mutex;           // guards `pool` only, held for a push or a pop
  std::vector<std::unique_ptr<Scratch>> pool;  // idle scratch, one per concurrent call at most
};

namespace {

rg_status fail(rg_error* err, rg_status status, const std::string& message) {
  if (err != nullptr) {
    err->status = status;
    size_t n = std::min(message.size(), sizeof err->message - 1);
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return status;
}

rg_status code(const LoadStatus& s) {
  switch (s.error) {
    case replaygate::LoadError::kIncompatible:
      return RG_ERR_INCOMPATIBLE;
    case replaygate::LoadError::kSignature:
      return RG_ERR_SIGNATURE;
    case replaygate::LoadError::kRollback:
      return RG_ERR_ROLLBACK;
    case replaygate::LoadError::kExpired:
      return RG_ERR_EXPIRED;
    default:
      return static_cast<rg_status>(s.error);
  }
}

// rgj_open and rgj_open_verified: the gate over a shared table loaded plainly (`trust` null) or
// verified, every reload too (replaygate::verify::open_shared).
rg_status open_gate(const char* path, const replaygate::verify::TrustOptions* trust, rgj_gate** out,
                    rg_error* err) {
  if (out == nullptr || path == nullptr) return fail(err, RG_ERR_ARGUMENT, "NULL argument");
  *out = nullptr;
  try {
    LoadStatus status;
    auto shared = trust == nullptr ? SharedTable::open(path, &status)
                                   : replaygate::verify::open_shared(
                                         path, *trust, SharedTable::kDefaultMaxReaders, &status);
    if (shared == nullptr) return fail(err, code(status), status.message);
    auto gate = std::make_unique<rgj_gate>();
    {
      SharedTable::Reader reader(*shared);
      auto guard = reader.acquire();
      for (uint32_t v = 0; v < guard.table().verb_count(); ++v) {
        gate->verbs.emplace_back(guard.table().verb_name(v));
      }
    }
    gate->shared = std::move(shared);
    *out = gate.release();
    return fail(err, RG_OK, "");
  } catch (const std::bad_alloc&) {
    return fail(err, RG_ERR_NO_MEMORY, "out of memory");
  }
}

}  // namespace

extern "C" {

rg_status rgj_open(const char* path, rgj_gate** out, rg_error* err) {
  return open_gate(path, nullptr, out, err);
}

rg_status rgj_open_verified(const char* path, const char* const* trusted_keys, size_t nkeys,
                            const char* trust_state, uint32_t flags, rgj_gate** out,
                            rg_error* err) {
  if (out == nullptr || path == nullptr) return fail(err, RG_ERR_ARGUMENT, "NULL argument");
  *out = nullptr;
  try {
    replaygate::verify::TrustOptions trust;
    std::string error;
    if (!replaygate::verify::trust_options_from(trusted_keys, nkeys, trust_state, flags, &trust,
                                                &error)) {
      return fail(err, RG_ERR_ARGUMENT, error);
    }
    return open_gate(path, &trust, out, err);
  } catch (const std::bad_alloc&) {
    return fail(err, RG_ERR_NO_MEMORY, "out of memory");
  }
}

void rgj_free(rgj_gate* gate) { delete gate; }

rg_status rgj_reload(rgj_gate* gate, const char* path, rg_error* err) {
  if (gate == nullptr || path == nullptr) return fail(err, RG_ERR_ARGUMENT, "NULL argument");
  try {
    LoadStatus status;
    if (!gate->shared->reload(path, &status)) return fail(err, code(status), status.message);
    return fail(err, RG_OK, "");
  } catch (const std::bad_alloc&) {
    return fail(err, RG_ERR_NO_MEMORY, "out of memory");
  }
}

uint32_t rgj_verb_count(const rgj_gate* gate) {
  return gate == nullptr ? 0 : static_cast<uint32_t>(gate->verbs.size());
}

rg_str rgj_verb_name(const rgj_gate* gate, uint32_t verb) {
  if (gate == nullptr || verb >= gate->verbs.size()) return rg_str{"", 0};
  return rg_str{gate->verbs[verb].data(), gate->verbs[verb].size()};
}

rg_status rgj_verb_effects(rgj_gate* gate, uint32_t* effects, size_t capacity,
                           uint32_t* default_verb, char* checksum_out) {
  if (gate == nullptr || (effects == nullptr && capacity > 0)) return RG_ERR_ARGUMENT;
  try {
    SharedTable::Reader reader(*gate->shared);
    if (!reader.ok()) return RG_ERR_NO_READER_SLOT;
    auto guard = reader.acquire();  // every fact from this one table
    const replaygate::Table& table = guard.table();
    for (uint32_t v = 0; v < table.verb_count() && v < capacity; ++v) {
      effects[v] = static_cast<uint32_t>(table.verb_effect(v));
    }
    if (default_verb != nullptr) *default_verb = table.default_verb();
    if (checksum_out != nullptr) std::memcpy(checksum_out, guard.checksum(), 33);
    return RG_OK;
  } catch (const std::bad_alloc&) {
    return RG_ERR_NO_MEMORY;
  }
}

rg_status rgj_decide_lines(rgj_gate* gate, const char* buf, size_t size, uint32_t* verbs,
                           size_t capacity, size_t* count, size_t* invalid, size_t* consumed,
                           char* checksum_out) {
  if (gate == nullptr || (buf == nullptr && size > 0) || verbs == nullptr || count == nullptr) {
    return RG_ERR_ARGUMENT;
  }
  try {
    std::unique_ptr<Scratch> scratch;
    {
      std::lock_guard<std::mutex> lock(gate->pool_mutex);
      if (!gate->pool.empty()) {
        scratch = std::move(gate->pool.back());
        gate->pool.pop_back();
      }
    }
    if (scratch == nullptr) {
      SharedTable::Reader reader(*gate->shared);
      if (!reader.ok()) return RG_ERR_NO_READER_SLOT;
      scratch = std::make_unique<Scratch>(reader.acquire().table());
    }
    // The stream driver of `replaygate decide` (pipeline/stream.h) on the current table: the same
    // parse and decision per line, every line a record, a blank one included (the parser rejects
    // it as "blank line", as decide does: skipping it would shift every later verb onto the wrong
    // line). A readable record whose field failed validation is invalid too, as decide counts it.
    replaygate::pipeline::Gate::Options options;
    const std::unique_ptr<replaygate::pipeline::Gate> pinned =
        replaygate::pipeline::Gate::open(*gate->shared, scratch->parser, scratch->guard, options);
    if (pinned == nullptr) {
      std::lock_guard<std::mutex> lock(gate->pool_mutex);
      gate->pool.push_back(std::move(scratch));
      return RG_ERR_NO_READER_SLOT;
    }
    if (checksum_out != nullptr) std::memcpy(checksum_out, pinned->checksum(), 33);
    scratch->verbs.start(verbs);
    pinned->add_stage(&scratch->verbs);
    replaygate::pipeline::BufferSource source(buf, size, capacity, &scratch->line);
    replaygate::pipeline::run_stream(*pinned, nullptr, source, scratch->sink);
    *count = scratch->verbs.count();
    if (invalid != nullptr) *invalid = static_cast<size_t>(pinned->counts().invalid);
    if (consumed != nullptr) *consumed = source.consumed();
    {
      std::lock_guard<std::mutex> lock(gate->pool_mutex);
      gate->pool.push_back(std::move(scratch));
    }
    return RG_OK;
  } catch (const std::bad_alloc&) {
    return RG_ERR_NO_MEMORY;
  }
}

}  // extern "C"
