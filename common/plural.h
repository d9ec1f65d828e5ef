// plural(): a count and its noun for a message, so that no message says "1 records".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace replaygate {

// A count and its noun for a message: "1 entry", "2 entries", "0 entries" (`one` when n is 1,
// else `many`). The one plural helper of the CLI, so that no message says "1 records".
std::string plural(uint64_t n, std::string_view one, std::string_view many);

// The same for a noun whose plural adds an s: plural(1, "record") is "1 record", plural(2,
// "record") "2 records".
std::string plural(uint64_t n, std::string_view one);

}  // namespace replaygate
