// Duplicate keys at any depth of a parsed record (see json_keys.h).
#include "inputs/json_keys.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "inputs/records.h"

namespace replaygate::inputs {
namespace {

namespace dom = simdjson::dom;

// One open container: where its members are read from, and (objects) the keys seen so far.
struct Frame {
  bool object = false;
  dom::object::iterator key_at, key_end;
  dom::array::iterator element_at, element_end;
  size_t index = 0;   // arrays: the position of the next element
  std::string token;  // this container's own JSON pointer token ("" for the root)
  std::vector<std::string_view> seen;
};

void append_token(std::string* pointer, std::string_view token) {
  *pointer += '/';
  for (const char c : token) {
    if (c == '~') {
      *pointer += "~0";
    } else if (c == '/') {
      *pointer += "~1";
    } else {
      *pointer += c;
    }
  }
}

Frame open(const dom::element& element, std::string token) {
  Frame frame;
  frame.token = std::move(token);
  if (element.is_object()) {
    const dom::object object = element.get_object().value_unsafe();
    frame.object = true;
    frame.key_at = object.begin();
    frame.key_end = object.end();
  } else {
    const dom::array array = element.get_array().value_unsafe();
    frame.element_at = array.begin();
    frame.element_end = array.end();
  }
  return frame;
}

std::string reason(const std::vector<Frame>& stack, std::string_view key) {
  std::string problem = "duplicate key " + quote_for_reason(key);
  if (stack.size() > 1) {
    std::string pointer;
    for (size_t i = 1; i < stack.size(); ++i) append_token(&pointer, stack[i].token);
    const std::string shown = quote_for_reason(pointer);  // "'/a/b'": shown without the quotes
    problem += " in " + shown.substr(1, shown.size() - 2);
  }
  return problem;
}

}  // namespace

std::string duplicate_key_problem(const dom::element& root) {
  if (!root.is_object() && !root.is_array()) return "";
  std::vector<Frame> stack;
  stack.push_back(open(root, ""));
  while (!stack.empty()) {
    Frame& frame = stack.back();
    dom::element child;
    std::string token;
    if (frame.object) {
      if (frame.key_at == frame.key_end) {
        stack.pop_back();
        continue;
      }
      const std::string_view key = frame.key_at.key();
      // Records have few keys per object: a linear look-up beats a set here.
      if (std::find(frame.seen.begin(), frame.seen.end(), key) != frame.seen.end()) {
        return reason(stack, key);
      }
      frame.seen.push_back(key);
      child = frame.key_at.value();
      token = std::string(key);
      ++frame.key_at;
    } else {
      if (frame.element_at == frame.element_end) {
        stack.pop_back();
        continue;
      }
      child = *frame.element_at;
      token = std::to_string(frame.index++);
      ++frame.element_at;
    }
    if (child.is_object() || child.is_array()) stack.push_back(open(child, std::move(token)));
  }
  return "";
}

}  // namespace replaygate::inputs
