#include "hilo/text/source_location.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "hilo/text/char_class.h"

namespace hilo {

namespace {

// The length of the valid UTF-8 sequence of 2 to 4 bytes at `text[i]`, or 0.
size_t Utf8SequenceLength(absl::string_view text, size_t i) {
  const unsigned char lead = static_cast<unsigned char>(text[i]);
  size_t length = 0;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    const unsigned char c = static_cast<unsigned char>(text[i + k]);
    if (c < 0x80 || c > 0xBF) return 0;
  }
  return length;
}

// Appends `raw` as an error message quotes it: tabs and CRs as spaces, other
// control bytes, DEL and bytes that are not valid UTF-8 as `\xNN`, so that a
// binary input never sends raw bytes to a terminal. Stops before `out`
// grows past `limit`; returns the number of bytes of `raw` shown.
size_t AppendShown(absl::string_view raw, std::string* out, size_t limit = std::string::npos) {
  static constexpr char kHex[] = "0123456789abcdef";
  size_t i = 0;
  for (; i < raw.size() && out->size() < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c == '\t' || c == '\r') {
      *out += ' ';
    } else if (c >= 0x20 && c < 0x7F) {
      *out += static_cast<char>(c);
    } else if (size_t length = c >= 0x80 ? Utf8SequenceLength(raw, i) : 0; length > 0) {
      out->append(raw.data() + i, length);
      i += length - 1;
    } else {
      *out += "\\x";
      *out += kHex[c >> 4];
      *out += kHex[c & 0xF];
    }
  }
  return i;
}

}  // namespace

std::string FormatErrorAt(absl::string_view filename, absl::string_view text, size_t offset,
                          absl::string_view message) {
  const size_t pos = std::min(offset, text.size());
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  size_t line_end = text.find('\n', line_start);
  if (line_end == absl::string_view::npos) line_end = text.size();
  const size_t col = pos - line_start + 1;
  // Show at most a window of a very long line, keeping the caret aligned.
  constexpr size_t kWindow = 100;
  size_t show_start = line_start;
  std::string prefix;
  if (pos - line_start > kWindow) {
    show_start = pos - kWindow / 2;
    prefix = "...";
  }
  const size_t show_end = std::min(line_end, show_start + 2 * kWindow);
  // The caret goes under the byte at `pos` as the line is shown (escapes
  // included).
  std::string shown = prefix;
  AppendShown(text.substr(show_start, pos - show_start), &shown);
  std::string caret(shown.size(), ' ');
  caret += '^';
  // As long as a text line's window; escapes make a binary one longer.
  const size_t after =
      AppendShown(text.substr(pos, show_end - pos), &shown, prefix.size() + 2 * kWindow);
  if (pos + after < line_end) shown += "...";
  // Messages quote names and values from the input; a 100 MB name must not
  // make a 100 MB message.
  std::string capped(message.substr(0, kMaxErrorMessageBytes));
  if (message.size() > kMaxErrorMessageBytes) capped += "...";
  return absl::StrCat(filename, ":", line, ":", col, ": error: ", capped, "\n", shown, "\n", caret);
}

namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The name at `*i` (a '%' is skipped and not part of it); advances past it.
absl::string_view TakeName(absl::string_view line, size_t* i) {
  if (*i < line.size() && line[*i] == '%') ++*i;
  const size_t start = *i;
  while (*i < line.size() && IsIdentChar(line[*i])) ++*i;
  return line.substr(start, *i - start);
}

void SkipBlanks(absl::string_view line, size_t* i) {
  while (*i < line.size() && IsBlank(line[*i])) ++*i;
}

}  // namespace

std::optional<size_t> FindDefinition(absl::string_view text, absl::string_view computation,
                                     absl::string_view instruction) {
  bool in_computation = false;
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == absl::string_view::npos) line_end = text.size();
    const absl::string_view line = text.substr(line_start, line_end - line_start);
    size_t i = 0;
    SkipBlanks(line, &i);
    bool entry = false;
    if (line.substr(i, 6) == "ENTRY " || line.substr(i, 6) == "ENTRY\t") {
      entry = true;
      i += 6;
      SkipBlanks(line, &i);
    }
    size_t name_at = i;
    absl::string_view name = TakeName(line, &i);
    if (!entry && name == "ROOT") {
      SkipBlanks(line, &i);
      name_at = i;
      name = TakeName(line, &i);
    }
    SkipBlanks(line, &i);
    if (!name.empty() && i < line.size()) {
      if (line[i] == '=' && !entry) {
        if (in_computation && !instruction.empty() && name == instruction) return line_start + name_at;
      } else if (line[i] == '(' || line[i] == '{') {
        size_t last = line.size();
        while (last > 0 && IsBlank(line[last - 1])) --last;
        if (last > 0 && line[last - 1] == '{') {  // a computation header
          in_computation = name == computation;
          if (in_computation && instruction.empty()) return line_start + name_at;
        }
      }
    }
    line_start = line_end + 1;
  }
  return std::nullopt;
}

namespace {

// Reads a decimal number and the ':' after it from the front of `text`.
std::optional<int64_t> ConsumeNumberAndColon(absl::string_view* text) {
  size_t digits = 0;
  while (digits < text->size() && absl::ascii_isdigit(static_cast<unsigned char>((*text)[digits]))) {
    ++digits;
  }
  int64_t value = 0;
  if (digits == 0 || digits >= text->size() || (*text)[digits] != ':' ||
      !absl::SimpleAtoi(text->substr(0, digits), &value)) {
    return std::nullopt;
  }
  text->remove_prefix(digits + 1);
  return value;
}

}  // namespace

std::optional<ErrorLocation> ParseErrorLocation(absl::string_view error,
                                                absl::string_view filename) {
  if (!absl::ConsumePrefix(&error, filename) || !absl::ConsumePrefix(&error, ":")) {
    return std::nullopt;
  }
  std::optional<int64_t> line = ConsumeNumberAndColon(&error);
  if (!line.has_value()) return std::nullopt;
  std::optional<int64_t> column = ConsumeNumberAndColon(&error);
  if (!column.has_value() || !absl::ConsumePrefix(&error, " error: ")) return std::nullopt;
  return ErrorLocation{*line, *column, std::string(error.substr(0, error.find('\n')))};
}

}  // namespace hilo
