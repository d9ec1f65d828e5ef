// ByteBuffer's growth (see byte_buffer.h).
#include "common/byte_buffer.h"

#include <utility>

namespace replaygate {

void ByteBuffer::grow(size_t n) {
  size_t capacity = capacity_ * 2;
  if (capacity < size_ + n) capacity = size_ + n;
  std::unique_ptr<char[]> bigger(new char[capacity]);
  if (size_ != 0) std::memcpy(bigger.get(), data_.get(), size_);  // data_ is null at first
  data_ = std::move(bigger);
  capacity_ = capacity;
}

}  // namespace replaygate
