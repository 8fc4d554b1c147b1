// Interned attribute names.
//
// Every instruction remembers the order its attributes were written in
// (HloInstruction::attribute_order()). Attribute names come from a small
// vocabulary, so the list holds views of one process-wide copy of each name
// instead of a string per attribute per instruction.
#ifndef HILO_IR_ATTRIBUTE_NAMES_H_
#define HILO_IR_ATTRIBUTE_NAMES_H_

#include "absl/strings/string_view.h"

namespace hilo {

// A view of a copy of `name` that lives until the process exits; equal names
// give the same view. The names XLA's text format defines are built in and
// found without a lock; any other name is copied once into a guarded pool
// (it grows only with names never seen before, so by the size of the inputs).
// Thread-safe.
absl::string_view InternAttributeName(absl::string_view name);

}  // namespace hilo

#endif  // HILO_IR_ATTRIBUTE_NAMES_H_
