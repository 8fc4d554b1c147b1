#include "hilo/pass/pass_name.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"

namespace hilo {

std::string NormalizePassName(absl::string_view name) {
  std::string normalized(name);
  std::replace(normalized.begin(), normalized.end(), '_', '-');
  return normalized;
}

size_t EditDistance(absl::string_view a, absl::string_view b) {
  // row[j]: distance between the first i bytes of a and the first j of b.
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {

// How names are compared for a suggestion: case does not matter either.
std::string Comparable(absl::string_view name) {
  return absl::AsciiStrToLower(NormalizePassName(name));
}

}  // namespace

std::optional<std::string> SuggestPassName(absl::string_view name,
                                           absl::Span<const std::string> candidates) {
  constexpr size_t kMaxLength = 200;
  const std::string wanted = Comparable(name);
  if (wanted.empty() || wanted.size() > kMaxLength) return std::nullopt;
  const size_t limit = std::max<size_t>(2, wanted.size() / 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  bool tie = false;
  for (const std::string& candidate : candidates) {
    const size_t distance = EditDistance(wanted, Comparable(candidate));
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
      tie = false;
    } else if (distance == best_distance) {
      tie = true;
    }
  }
  if (best.has_value() && !tie) return best;
  if (best.has_value() || wanted.size() < 4) return std::nullopt;
  std::optional<std::string> containing;
  for (const std::string& candidate : candidates) {
    if (Comparable(candidate).find(wanted) == std::string::npos) continue;
    if (containing.has_value()) return std::nullopt;
    containing = candidate;
  }
  return containing;
}

}  // namespace hilo
