// The eval tests' shared set-up: parsing a module, running it, flattening
// values, the common `add` reducer (issue 18 item 5: one piece, not a copy
// per test file).
#ifndef HILO_TESTS_UNIT_EVAL_TEST_UTIL_H_
#define HILO_TESTS_UNIT_EVAL_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hilo/eval/equivalence.h"
#include "hilo/eval/interpreter.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace eval {
namespace testing_util {

inline std::unique_ptr<HloModule> Parse(const std::string& text) {
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

inline absl::StatusOr<RunResult> RunText(const std::string& text, const std::string& inputs = "",
                                         std::optional<int64_t> devices = std::nullopt) {
  auto m = Parse(text);
  if (m == nullptr) return absl::InvalidArgumentError("parse failed");
  InterpreterOptions options;
  options.inputs_text = inputs;
  options.devices = devices;
  return RunModule(*m, options);
}

// Every array leaf's elements, depth-first, as doubles.
inline std::vector<double> Flat(const Value& v) {
  std::vector<double> out;
  std::vector<const Array*> leaves;
  v.CollectLeaves(&leaves);
  for (const Array* a : leaves) {
    for (int64_t k = 0; k < a->size(); ++k) out.push_back(a->GetDouble(k));
  }
  return out;
}

// Runs a one-device module and returns its (flattened) output.
inline std::vector<double> Eval1(const std::string& text, const std::string& inputs = "") {
  auto r = RunText(text, inputs);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  return Flat(r->outputs[0]);
}

// CheckEquivalence on two module texts (an empty report if either fails).
inline EquivalenceReport CheckTexts(const std::string& before, const std::string& after,
                                    const EquivalenceOptions& options = {}) {
  auto b = Parse(before);
  auto a = Parse(after);
  if (b == nullptr || a == nullptr) return {};
  auto r = CheckEquivalence(*b, *a, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : EquivalenceReport{};
}

inline constexpr char kAdd[] = R"(
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
)";

// A variadic (value, index) reducer keeping the first largest value.
inline constexpr char kArgmax[] = R"(
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v1, v0), direction=GT
  v = f32[] select(gt, v1, v0)
  i = s32[] select(gt, i1, i0)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
)";

}  // namespace testing_util
}  // namespace eval
}  // namespace hilo

#endif  // HILO_TESTS_UNIT_EVAL_TEST_UTIL_H_
