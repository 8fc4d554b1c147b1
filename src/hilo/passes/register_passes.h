// RegisterBuiltinPasses: every pass and named pipeline hilo-opt knows.
#ifndef HILO_PASSES_REGISTER_PASSES_H_
#define HILO_PASSES_REGISTER_PASSES_H_

#include "hilo/pass/pass_registry.h"

namespace hilo {

void RegisterBuiltinPasses(PassRegistry& registry);

}  // namespace hilo

#endif  // HILO_PASSES_REGISTER_PASSES_H_
