// PrintHloModule: HloModule -> XLA's HLO text format.
//
// Deterministic, in XLA's layout (two-space indent, `ROOT`, `%name = shape
// opcode(operands), attributes`). Everything the parser kept is printed
// back, so print(parse(print(parse(x)))) == print(parse(x)) byte for byte.
#ifndef HILO_TEXT_PRINTER_H_
#define HILO_TEXT_PRINTER_H_

#include <string>

#include "hilo/ir/hlo_module.h"

namespace hilo {

std::string PrintHloModule(const HloModule& module);
void AppendHloModule(const HloModule& module, std::string* out);
// One instruction as a single line, without indent or `ROOT`.
std::string PrintHloInstruction(const HloInstruction& instruction);

}  // namespace hilo

#endif  // HILO_TEXT_PRINTER_H_
