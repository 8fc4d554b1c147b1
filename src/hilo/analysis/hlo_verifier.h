// VerifyHloModule: structural and shape checks of an HloModule.
//
// Returns OK or a FailedPrecondition status whose message names the
// computation and instruction and says what is wrong (the first problem
// found, in module order). Never aborts, whatever the module.
#ifndef HILO_ANALYSIS_HLO_VERIFIER_H_
#define HILO_ANALYSIS_HLO_VERIFIER_H_

#include "absl/status/status.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {

absl::Status VerifyHloModule(const HloModule& module);

}  // namespace hilo

#endif  // HILO_ANALYSIS_HLO_VERIFIER_H_
