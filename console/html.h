// HTML for the console's pages (docs/console.md): escaping and the page frame. Every value a page
// shows goes through escape(); pages carry no inline script or style (the CSP forbids both).
//
// In: text of any bytes. Out: HTML text safe in element content and in a quoted attribute.
#pragma once

#include <string>
#include <string_view>

namespace replaygate::console {

// `text` with & < > " ' as character references, each byte that is not UTF-8 and each control
// character but tab and newline as U+FFFD: any bytes in, one well-formed text out.
std::string escape(std::string_view text);

struct PageFrame {
  std::string title;             // escaped here
  std::string user, role, csrf;  // the signed-in user ("" on the login page)
};
// The whole document: head (the stylesheet /static/console.css), the navigation with the user and
// a logout form, then `body` (HTML, already escaped by the caller).
std::string page(const PageFrame& frame, const std::string& body);

// The stylesheet served at /static/console.css.
std::string_view stylesheet();

}  // namespace replaygate::console
