// Where tests (and benchmarks) find the shared folder: the specification's
// opcode table (spec/hlo-opcodes.tsv) and the real-HLO corpus (corpus/).
// It is not part of this repository, so a test that needs it starts with
//
//   HILO_SKIP_WITHOUT_SHARED_DIR();
//
// and names files as hilo::test::SharedDir() + "/corpus/...". The folder is
// $HILO_SHARED_DIR when that is set, else the build's default
// HILO_DEFAULT_SHARED_DIR (<source>/../shared), decided when the test runs,
// so an existing build can be pointed at a corpus. When the folder is
// absent the test is skipped with one line saying so and how to run it
// (tests/unit/test_main.cc then exits 77, which CTest reports as
// "Skipped"), unless the folder is required: then it is a failure. It is
// required when HILO_SHARED_DIR is set (a wrong path is a mistake, not a
// reason to skip), when HILO_REQUIRE_SHARED is set and not 0 (.ci/run sets
// it), and when CI=true and HILO_REQUIRE_SHARED is unset.
// The lit suite applies the same rules (tests/lit/lit.cfg.py).
#ifndef HILO_TESTS_UNIT_SHARED_DIR_H_
#define HILO_TESTS_UNIT_SHARED_DIR_H_

#include <cstdlib>
#include <filesystem>
#include <string>

#ifndef HILO_DEFAULT_SHARED_DIR
#error "HILO_DEFAULT_SHARED_DIR must be defined by the build (tests/CMakeLists.txt)"
#endif

namespace hilo::test {

// $HILO_SHARED_DIR if set and non-empty, else the build's default.
inline const std::string& SharedDir() {
  static const std::string dir = [] {
    const char* env = std::getenv("HILO_SHARED_DIR");
    return std::string(env != nullptr && *env != '\0' ? env : HILO_DEFAULT_SHARED_DIR);
  }();
  return dir;
}

// Whether a missing shared folder fails instead of skipping: where it is
// required, or where HILO_SHARED_DIR names it explicitly.
inline bool SharedDirRequired() {
  const char* env = std::getenv("HILO_SHARED_DIR");
  if (env != nullptr && *env != '\0') return true;
  const char* require = std::getenv("HILO_REQUIRE_SHARED");
  if (require != nullptr && *require != '\0') return std::string(require) != "0";
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// Empty when the shared folder is there; else the one line that says what
// is missing and how to run the tests that need it.
inline std::string SharedDirProblem() {
  std::error_code error;
  if (std::filesystem::is_directory(SharedDir(), error)) return "";
  return "needs the shared folder (spec/hlo-opcodes.tsv, corpus/), not found at " + SharedDir() +
         (SharedDirRequired() ? " (required here: HILO_SHARED_DIR, HILO_REQUIRE_SHARED or CI=true "
                                "is set)"
                              : "; to run it, set HILO_SHARED_DIR=<folder>");
}

}  // namespace hilo::test

// Ends the current test (a TEST body or SetUp; it returns from the function)
// when the shared folder is absent: skipped, or failed where the folder is
// required (see above).
#define HILO_SKIP_WITHOUT_SHARED_DIR()                                        \
  do {                                                                        \
    const std::string hilo_shared_problem = ::hilo::test::SharedDirProblem(); \
    if (!hilo_shared_problem.empty()) {                                       \
      if (::hilo::test::SharedDirRequired()) FAIL() << hilo_shared_problem;   \
      GTEST_SKIP() << hilo_shared_problem;                                    \
    }                                                                         \
  } while (0)

#endif  // HILO_TESTS_UNIT_SHARED_DIR_H_
