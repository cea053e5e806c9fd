// Text inside XML/SVG: the five characters that would end or open markup,
// escaped. Header only: blocktest uses it without the engine library.
#pragma once

#include <string>
#include <string_view>

namespace rateline::report {

inline std::string xml_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace rateline::report
