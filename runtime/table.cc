// PLACEHOLDER until the runtime lands (owner: table helper). Replace wholesale.
#include "runtime/table.h"
namespace replaygate {
struct Table::Impl {};
Table::Table(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Table::~Table() = default;
std::unique_ptr<Table> Table::load_file(const std::string&, LoadStatus* s) {
  s->error = LoadError::kIo;
  s->message = "runtime not built yet";
  return nullptr;
}
std::unique_ptr<Table> Table::load_bytes(const void*, size_t, LoadStatus* s) {
  return load_file("", s);
}
Decision Table::decide(const Input&) const noexcept { return {}; }
uint32_t Table::field_count() const noexcept { return 0; }
Input::Input(const Table& t) : slots_(t.field_count()) {}
}  // namespace replaygate
