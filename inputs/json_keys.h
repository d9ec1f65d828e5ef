// The one duplicate-key check of every reader that parses a record into simdjson's DOM (rabbitmq,
// sqs, pubsub, servicebus, sidekiq): a DOM keeps both members of a repeated key and a lookup
// returns one of them, so without this check `"retry_count":0,"retry_count":9` (or the second
// spelt `retry_coun\u0074`) would decide on whichever the reader happened to see. The letters and
// kcat readers (simdjson on-demand, flat objects) check their keys as they read them.
//
//   duplicate_key_problem(root)  -> "" or the reason, for the record's whole document
#pragma once

#include <simdjson.h>

#include <string>

namespace replaygate::inputs {

// "" when no object anywhere in `root` gives a key twice (keys compared unescaped, as simdjson
// hands them out); else the reason for the first such key in document order, which is the one
// locate_duplicate_key() (records.h) finds in the text: "duplicate key 'retry_count'" at the top
// level, "duplicate key 'count' in /properties/headers/x-death/0" below it (the object's JSON
// pointer, escaped and cut as quote_for_reason() does). No recursion: a stack of open containers,
// as deep as the document (the readers have bounded it to kMaxJsonDepth before parsing).
std::string duplicate_key_problem(const simdjson::dom::element& root);

}  // namespace replaygate::inputs
