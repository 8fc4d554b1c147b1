// main() of every unit test: GoogleTest's, except that a run in which some
// test was skipped (GTEST_SKIP, e.g. HILO_SKIP_WITHOUT_SHARED_DIR) and none
// failed exits 77, which tests/CMakeLists.txt declares as CTest's
// SKIP_RETURN_CODE: CTest then reports the program as "Skipped", not
// "Passed". A failure still exits 1, whatever was skipped.
#include "gtest/gtest.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (result == 0 && testing::UnitTest::GetInstance()->skipped_test_count() > 0) return 77;
  return result;
}
