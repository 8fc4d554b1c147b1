#include "hilo/ir/instruction_name_index.h"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace hilo {

void InstructionNameIndex::AddressTooHigh() {
  std::fputs("hilo: an instruction's address is above 2^48, which the module's name index "
             "(instruction_name_index.h) can not store\n", stderr);
  std::abort();
}

}  // namespace hilo
