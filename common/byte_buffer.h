// ByteBuffer: a growable byte buffer written through raw pointers (reserve room, write, commit).
// `decide` formats a million lines a second with it, where each std::string::append is a call and
// a capacity check. Not thread-safe; owns its memory.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>

namespace replaygate {

// A growable byte buffer filled through raw pointers: room(n) returns where the next bytes go
// (at least n writable), commit(end) keeps what was written up to `end`.
class ByteBuffer {
 public:
  explicit ByteBuffer(size_t capacity = 4096) : data_(new char[capacity]), capacity_(capacity) {}
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  char* room(size_t n) {
    if (capacity_ - size_ < n) grow(n);
    return data_.get() + size_;
  }
  void commit(const char* end) { size_ = static_cast<size_t>(end - data_.get()); }
  void append(const char* bytes, size_t n) {
    if (n == 0) return;  // `bytes` may be null then (an empty view), which memcpy must not get
    std::memcpy(room(n), bytes, n);
    size_ += n;
  }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

 private:
  void grow(size_t n);  // capacity at least size_ + n, contents kept

  std::unique_ptr<char[]> data_;
  size_t capacity_;
  size_t size_ = 0;
};

}  // namespace replaygate
