// The mapping's value decodings (`decode:` in a mapping file, docs/input-mapping.md "Decodings"),
// shared by every reader: a header's or attribute's bytes -> an integer, text or JSON scalar. Each
// function either decodes exactly or says why not; none guesses (a lone byte 0x33 is 51 as be-int
// and not a decimal "3" unless the mapping says decimal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace replaygate::inputs {

// A big-endian two's-complement integer of 1, 2, 4 or 8 bytes (Java byte, short, int, long, as
// Spring Kafka writes partition, offset, timestamp and retry_topic-attempts). Any other length is
// refused: "be-int takes 1, 2, 4 or 8 bytes, not 3" (an empty value: "... not 0").
bool decode_be_int(std::string_view bytes, int64_t* value, std::string* why);

// ASCII -?[0-9]+ within int64, nothing else (no sign '+', no spaces, no other bytes).
bool decode_decimal(std::string_view text, int64_t* value, std::string* why);

// RFC 4648 base64 with padding (the standard alphabet; '-' and '_' of base64url are refused, as are
// whitespace and a length not a multiple of 4).
bool decode_base64(std::string_view text, std::string* bytes, std::string* why);
// The same encoding of `bytes` (decode_base64's inverse): what a management-API record carries
// as a binary payload (the live gate, redrive/rabbitmq/envelope_record.h).
std::string encode_base64(std::string_view bytes);

// Whether `bytes` is valid UTF-8; *why names the first bad byte's offset when not.
bool check_utf8(std::string_view bytes, std::string* why);

}  // namespace replaygate::inputs
