// What /proc/self/smaps says about the mapping that holds an address (for
// the tests of memory that is mapped and advised by hand).
#ifndef HILO_TESTS_UNIT_SMAPS_H_
#define HILO_TESTS_UNIT_SMAPS_H_

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace hilo::testing {

// The rest of line `field` ("Rss:", "VmFlags:", ...) of the mapping of this
// process that holds `address`, with a blank at both ends; "" when no
// mapping holds it.
inline std::string SmapsField(const void* address, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = begin <= a && a < end;
    } else if (inside && line.rfind(field, 0) == 0) {
      return line.substr(field.size()) + " ";
    }
  }
  return "";
}

}  // namespace hilo::testing

#endif  // HILO_TESTS_UNIT_SMAPS_H_
