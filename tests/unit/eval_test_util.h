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

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
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

// A module whose entry takes a and b of `shape` and returns the tuple of
// `op(a, b)` for each of `binary`, then `op(a)` for each of `unary`.
inline std::string ElementwiseModule(const std::string& shape, const std::vector<std::string>& binary,
                                     const std::vector<std::string>& unary = {}) {
  std::string body, names, shapes;
  int k = 0;
  auto add = [&](const std::string& op, const char* operands) {
    absl::StrAppend(&body, "  r", k, " = ", shape, " ", op, operands, "\n");
    absl::StrAppend(&names, k == 0 ? "" : ", ", "r", k);
    absl::StrAppend(&shapes, k == 0 ? "" : ", ", shape);
    ++k;
  };
  for (const std::string& op : binary) add(op, "(a, b)");
  for (const std::string& op : unary) add(op, "(a)");
  return absl::StrCat("HloModule m\nENTRY e {\n  a = ", shape, " parameter(0)\n  b = ", shape,
                      " parameter(1)\n", body, "  ROOT t = (", shapes, ") tuple(", names, ")\n}\n");
}

// A computation `name` of scalar parameters p0, p1, ... of `types` (e.g.
// {"f32", "s32"}) whose instructions are `body` (ending in its ROOT).
inline std::string ScalarComputation(const std::string& name, const std::vector<std::string>& types,
                                     const std::string& body) {
  std::string out = absl::StrCat(name, " {\n");
  for (size_t k = 0; k < types.size(); ++k) absl::StrAppend(&out, "  p", k, " = ", types[k], "[] parameter(", k, ")\n");
  return absl::StrCat(out, body, "\n}\n");
}

// Expects `text` (or `status`, an error) to contain every one of `parts`.
inline void ExpectContains(const std::string& text, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) EXPECT_THAT(text, ::testing::HasSubstr(part));
}
inline void ExpectError(const absl::Status& status, std::initializer_list<std::string> parts) {
  ASSERT_FALSE(status.ok());
  ExpectContains(std::string(status.message()), parts);
}

// The computations `cond` and `body` of a while loop over the state
// (s32[] i, V v) that runs `trips` times: the body's `step` instructions
// compute `next` (of shape V) from `v`, and it returns (i + 1, next).
inline std::string CountedLoop(const std::string& v_shape, int64_t trips, const std::string& step) {
  return absl::StrReplaceAll(absl::StrCat(R"(
cond {
  s = (s32[], $V) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant()", trips, R"()
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], $V) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = $V get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
)", step, R"(
  ROOT t = (s32[], $V) tuple(i1, next)
}
)"),
                             {{"$V", v_shape}});
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
