// Who acted: the rule for an operator's name, the same in every audit entry and every --operator
// option (review, decide and audit result). One function, operator_name_problem().
#pragma once

#include <string>
#include <string_view>

namespace replaygate::audit {

// What is wrong with `name` as the name of who acted (`--operator` of review, decide and audit
// result; the `operator` field of an audit entry), as a phrase to follow the option or field name,
// or "" when it is usable. The name lands in the audit log and in plain-text output, so it must be
// one printable line of UTF-8:
//   "is empty" (also only spaces and tabs),
//   "is not valid UTF-8 (byte 3)",
//   "contains the control character U+000A (byte 4)" for C0 controls (NUL to U+001F), DEL, the C1
//   controls U+0080..U+009F and the line/paragraph separators U+2028/U+2029,
//   "contains the bidirectional control character U+202E (byte 4)" for the Bidi_Control
//   characters (U+061C, U+200E/U+200F, U+202A..U+202E, U+2066..U+2069), which reorder the text,
//   "has only white space or invisible characters, such as U+200B (byte 1)" when nothing shows
//   (Unicode White_Space and Default_Ignorable_Code_Point: U+00A0, U+3000, U+200B, U+FEFF, ...;
//   the first one that is not a space or tab is named).
std::string operator_name_problem(std::string_view name);

}  // namespace replaygate::audit
