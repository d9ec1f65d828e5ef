// HTML escaping and the page frame (console/html.h).
#include "console/html.h"

#include "common/utf8.h"

namespace replaygate::console {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (n == 1) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
            out += "\xEF\xBF\xBD";
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string page(const PageFrame& f, const std::string& body) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>" +
      escape(f.title) +
      " · replaygate console</title>"
      "<link rel=\"stylesheet\" href=\"/static/console.css\"></head><body>\n<header><strong>"
      "replaygate console</strong>";
  if (!f.user.empty()) {
    h += " <nav><a href=\"/plans\">Plans</a> <a href=\"/audit\">Audit trail</a></nav>"
         "<form class=\"who\" method=\"post\" action=\"/logout\"><span>" +
         escape(f.user) + " (" + escape(f.role) +
         ")</span> <input type=\"hidden\" name=\"csrf\" value=\"" + escape(f.csrf) +
         "\"><button type=\"submit\">Log out</button></form>";
  }
  h += "</header>\n<main>\n<h1>" + escape(f.title) + "</h1>\n" + body + "\n</main></body></html>\n";
  return h;
}

std::string_view stylesheet() {
  return R"(body{font-family:system-ui,sans-serif;margin:0;color:#1d232a;background:#f7f8fa}
header{display:flex;gap:1.5em;align-items:center;padding:.6em 1.2em;background:#24303c;color:#fff}
header a{color:#cfe3ff;margin-right:1em}header .who{margin-left:auto}header span{margin-right:.5em}
main{padding:1em 1.5em;max-width:75em}h1{font-size:1.4em}
table{border-collapse:collapse;background:#fff;width:100%}th,td{border:1px solid #d5dae0;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#eef1f5}code{font-size:.9em}td code{word-break:break-all}
.ok{color:#11702b;font-weight:bold}.bad{color:#b3261e;font-weight:bold}.note{color:#555}
.error{background:#fde7e6;border:1px solid #b3261e;padding:.5em}
form.box{background:#fff;border:1px solid #d5dae0;padding:1em;max-width:30em}
label{display:block;margin:.5em 0}input[type=text],input[type=password],textarea{width:100%;box-sizing:border-box}
)";
}

}  // namespace replaygate::console
