#include "pass_messages.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace hilo {

std::optional<std::string> PassSummaryLine(const nlohmann::json& entry) {
  // Not "changed": the stream-id injector stamps collectives but reports no
  // change when it found no exemplar (the original's quirk); what it did is
  // still said.
  auto summary = entry.find("change_summary");
  auto name = entry.find("name");
  if (summary == entry.end() || !summary->is_string() || summary->get<std::string>().empty() ||
      name == entry.end() || !name->is_string()) {
    return std::nullopt;
  }
  return absl::StrCat(name->get<std::string>(), ": ", summary->get<std::string>());
}

std::vector<std::string> GroupExplanations(absl::Span<const std::string> lines) {
  constexpr size_t kNamesShown = 3;
  struct Group {
    absl::string_view decision;
    std::vector<absl::string_view> whats;
  };
  // Each output slot is a line as it was (group == -1) or a group.
  std::vector<std::pair<size_t, int64_t>> slots;  // (line index, group or -1)
  std::vector<Group> groups;
  absl::flat_hash_map<absl::string_view, size_t> group_of;
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::string_view line = lines[i];
    const size_t colon = line.find(": ");
    if (colon == absl::string_view::npos) {
      slots.emplace_back(i, -1);
      continue;
    }
    absl::string_view decision = line.substr(colon + 2);
    auto [it, inserted] = group_of.try_emplace(decision, groups.size());
    if (inserted) {
      groups.push_back(Group{decision, {}});
      slots.emplace_back(i, static_cast<int64_t>(it->second));
    }
    groups[it->second].whats.push_back(line.substr(0, colon));
  }
  std::vector<std::string> out;
  out.reserve(slots.size());
  for (const auto& [index, group] : slots) {
    if (group < 0 || groups[group].whats.size() == 1) {
      out.push_back(lines[index]);
      continue;
    }
    const Group& g = groups[group];
    const size_t shown = std::min(kNamesShown, g.whats.size());
    std::string names = absl::StrJoin(g.whats.begin(), g.whats.begin() + shown, ", ");
    if (g.whats.size() > shown) absl::StrAppend(&names, " and ", g.whats.size() - shown, " more");
    out.push_back(absl::StrCat(g.whats.size(), " x ", g.decision, " (", names, ")"));
  }
  return out;
}

std::string EquivalenceNote(const eval::EquivalenceReport& report) {
  if (report.structurally_identical) {
    return "the verdict compares the modules before and after the passes structurally: they "
           "differ only in attributes that change no value (stream ids, metadata, channel ids "
           "that change no group; docs/interpreter.md, \"Soundness\"); --check-by-running runs "
           "both";
  }
  if (report.local.has_value()) {
    return absl::StrCat(
        "the verdict is local: only the regions the passes changed were run, before and after, "
        "by hilo's reference interpreter on ",
        report.grid.devices(), " simulated devices with the same random values at their inputs (seed ",
        report.seed, "), not the values the program computes there; the rest of the module is "
        "unchanged or paired instruction for instruction (docs/interpreter.md, \"Soundness\")");
  }
  return absl::StrCat(
      "the verdict compares the module before and after the passes, both run by hilo's "
      "reference interpreter on ",
      report.grid.devices(), " simulated devices with the same random inputs (seed ", report.seed,
      "); AwsNeuronCollectiveMatmul custom-calls run as hilo's model of the kernel's "
      "contract (docs/interpreter.md), not on Neuron hardware");
}

}  // namespace hilo
