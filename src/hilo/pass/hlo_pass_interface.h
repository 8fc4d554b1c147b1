// HloPassInterface: one HLO-to-HLO transformation, as XLA lays its passes out.
#ifndef HILO_PASS_HLO_PASS_INTERFACE_H_
#define HILO_PASS_HLO_PASS_INTERFACE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"
#include "nlohmann/json.hpp"

namespace hilo {

class HloPassInterface {
 public:
  virtual ~HloPassInterface() = default;

  // The registered name (`--passes=` and the report use it).
  virtual absl::string_view name() const = 0;

  // Runs the pass; true if the module changed.
  virtual absl::StatusOr<bool> Run(HloModule* module) = 0;

  // Pass-specific details of the last Run for the `--report` JSON entry
  // (the driver adds "name" and "changed"). An object; empty by default.
  virtual nlohmann::json ReportDetails() const { return nlohmann::json::object(); }

  // Warnings of the last Run: hilo-opt prints each on stderr as
  // `warning: <pass name>: <text>` and lists them in the report.
  virtual std::vector<std::string> Warnings() const { return {}; }

  // One human-readable line per candidate the last Run looked at, for
  // `hilo-opt --explain` (empty for passes with nothing to explain).
  virtual std::vector<std::string> Explanations() const { return {}; }
};

}  // namespace hilo

#endif  // HILO_PASS_HLO_PASS_INTERFACE_H_
