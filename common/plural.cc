// plural() (see plural.h).
#include "common/plural.h"

namespace replaygate {

std::string plural(uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string plural(uint64_t n, std::string_view one) {
  return n == 1 ? plural(n, one, one) : plural(n, one, std::string(one) + "s");
}

}  // namespace replaygate
