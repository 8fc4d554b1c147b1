// Collectives of the reference interpreter against hand-computed
// multi-device results: group modes, iota and empty groups, async forms,
// the AwsNeuronCollectiveMatmul kernel, and mismatches that must be errors.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "eval_test_util.h"
#include "hilo/eval/interpreter.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace eval {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::Flat;
using testing_util::kAdd;
using testing_util::Parse;
using testing_util::RunText;

// Inputs text giving parameter `param` of device d the values values(d).
std::string PerDevice(int devices, int param, std::function<std::vector<double>(int)> values) {
  std::string out;
  for (int d = 0; d < devices; ++d) {
    absl::StrAppend(&out, "param ", param, " device ", d, " : ", absl::StrJoin(values(d), " "), "\n");
  }
  return out;
}

// Every device's flattened output.
using PerDeviceValues = std::vector<std::vector<double>>;

// Runs and returns every device's flattened output.
PerDeviceValues RunAll(const std::string& text, const std::string& inputs) {
  auto r = RunText(text, inputs);
  EXPECT_TRUE(r.ok()) << r.status();
  PerDeviceValues out;
  if (!r.ok()) return out;
  for (const Value& v : r->outputs) out.push_back(Flat(v));
  return out;
}

std::string RunError(const std::string& text, const std::string& inputs) {
  auto r = RunText(text, inputs);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : std::string(r.status().message());
}

std::string Scalar1(int devices) {
  return PerDevice(devices, 0, [](int d) { return std::vector<double>{static_cast<double>(d)}; });
}

TEST(EvalCollectives, AllGatherIotaGroups) {
  const std::string hlo = R"(
HloModule m, replica_count=4
ENTRY e {
  p = f32[1] parameter(0)
  a = f32[2] all-gather(p), dimensions={0}, replica_groups=[2,2]<=[4]
  b = f32[2] all-gather(p), dimensions={0}, replica_groups=[2,2]<=[2,2]T(1,0)
  ROOT t = (f32[2], f32[2]) tuple(a, b)
})";
  auto out = RunAll(hlo, Scalar1(4));
  ASSERT_EQ(out.size(), 4u);
  // a: groups {0,1},{2,3}; b: groups {0,2},{1,3}.
  EXPECT_EQ(out, (PerDeviceValues{{0, 1, 0, 2}, {0, 1, 1, 3}, {2, 3, 0, 2}, {2, 3, 1, 3}}));
}

TEST(EvalCollectives, AllGatherOnInnerDimensionAndExplicitGroupOrder) {
  const std::string hlo = R"(
HloModule m, replica_count=2
ENTRY e {
  p = f32[2,1] parameter(0)
  ROOT a = f32[2,2] all-gather(p), dimensions={1}, replica_groups={{1,0}}
})";
  auto out = RunAll(hlo, PerDevice(2, 0, [](int d) { return std::vector<double>{10.0 * d, 10.0 * d + 1}; }));
  // Group order {1,0}: device 1's column first.
  EXPECT_EQ(out, (PerDeviceValues{{10, 0, 11, 1}, {10, 0, 11, 1}}));
}

// Devices run on several threads between collectives: the same outputs,
// bit for bit, and the same counts as on one thread.
TEST(EvalCollectives, ThreadsDoNotChangeResults) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=8\n", kAdd, R"(
ENTRY e {
  p = f32[16,16] parameter(0)
  d = f32[16,16] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[16,16] tanh(d)
  r = f32[16,16] all-reduce(t), replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=add
  e = f32[16,16] exponential(r)
  ROOT g = f32[16,128] all-gather(e), dimensions={1}, replica_groups={}
})");
  auto m = Parse(hlo);
  ASSERT_NE(m, nullptr);
  std::vector<RunResult> runs;
  for (int threads : {1, 2, 5}) {
    InterpreterOptions options;
    options.threads = threads;
    auto r = RunModule(*m, options);
    ASSERT_TRUE(r.ok()) << r.status();
    runs.push_back(*std::move(r));
  }
  for (size_t k = 1; k < runs.size(); ++k) {
    ASSERT_EQ(runs[k].outputs.size(), 8u);
    for (int d = 0; d < 8; ++d) EXPECT_TRUE(runs[k].outputs[d].array().IdenticalTo(runs[0].outputs[d].array())) << d;
    EXPECT_EQ(runs[k].instructions_executed, runs[0].instructions_executed);
    EXPECT_EQ(runs[k].work, runs[0].work);
  }
  // An error names the lowest failing device on any number of threads:
  // EvalOps.InfiniteLoopIsAnErrorNotAHang.
}

TEST(EvalCollectives, AllReduceEmptyGroupsMeansEveryone) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=4\n", kAdd, R"(
ENTRY e {
  p = f32[1] parameter(0)
  ROOT r = f32[1] all-reduce(p), replica_groups={}, to_apply=add
})");
  auto out = RunAll(hlo, Scalar1(4));
  for (int d = 0; d < 4; ++d) EXPECT_THAT(out[d], ElementsAre(6)) << d;
}

// A 2 x 2 grid: device = replica * 2 + partition, input = device id.
TEST(EvalCollectives, GroupModesOnReplicasTimesPartitions) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=2, num_partitions=2\n", kAdd, R"(
ENTRY e {
  p = f32[1] parameter(0)
  cross_replica = f32[1] all-reduce(p), replica_groups={}, to_apply=add
  crp_all = f32[1] all-reduce(p), channel_id=1, replica_groups={{0,1}}, to_apply=add
  crp_each = f32[1] all-reduce(p), channel_id=2, replica_groups={{0},{1}}, to_apply=add
  flat = f32[1] all-reduce(p), channel_id=3, replica_groups={{0,3},{1,2}}, use_global_device_ids=true, to_apply=add
  ROOT t = (f32[1], f32[1], f32[1], f32[1]) tuple(cross_replica, crp_all, crp_each, flat)
})");
  auto out = RunAll(hlo, Scalar1(4));
  ASSERT_EQ(out.size(), 4u);
  // cross-replica: {0,2} and {1,3}; replica-and-partition {{0,1}}: all four;
  // {{0},{1}}: each replica's partitions {0,1}, {2,3}; flattened: {0,3}, {1,2}.
  EXPECT_EQ(out, (PerDeviceValues{{2, 6, 1, 3}, {4, 6, 1, 3}, {2, 6, 5, 3}, {4, 6, 5, 3}}));
}

TEST(EvalCollectives, ChannelIdOnAllToAllMeansCrossPartition) {
  const std::string hlo = R"(
HloModule m, replica_count=2, num_partitions=2
ENTRY e {
  p = f32[2] parameter(0)
  ROOT a = f32[2] all-to-all(p), channel_id=1, replica_groups={{0,1}}, dimensions={0}
})";
  auto out = RunAll(hlo, PerDevice(4, 0, [](int d) { return std::vector<double>{10.0 * d, 10.0 * d + 1}; }));
  // Partitions of the same replica exchange: {0,1} and {2,3}.
  EXPECT_EQ(out, (PerDeviceValues{{0, 10}, {1, 11}, {20, 30}, {21, 31}}));
}

TEST(EvalCollectives, UseGlobalDeviceIdsWithoutChannelIsAnError) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=2\n", kAdd, R"(
ENTRY e {
  p = f32[1] parameter(0)
  ROOT r = f32[1] all-reduce(p), replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add
})");
  EXPECT_THAT(RunError(hlo, Scalar1(2)), HasSubstr("use_global_device_ids"));
}

TEST(EvalCollectives, ReduceScatter) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=2\n", kAdd, R"(
ENTRY e {
  p = f32[4] parameter(0)
  ROOT r = f32[2] reduce-scatter(p), replica_groups={{0,1}}, dimensions={0}, to_apply=add
})");
  auto out = RunAll(hlo, PerDevice(2, 0, [](int d) {
    return std::vector<double>{10.0 * d, 10.0 * d + 1, 10.0 * d + 2, 10.0 * d + 3};
  }));
  EXPECT_EQ(out, (PerDeviceValues{{10, 12}, {14, 16}}));
}

TEST(EvalCollectives, AllToAllArrayAndTupleForms) {
  const std::string hlo = R"(
HloModule m, replica_count=2
ENTRY e {
  p = f32[4] parameter(0)
  a = f32[4] all-to-all(p), replica_groups={{0,1}}, dimensions={0}
  q0 = f32[1] slice(p), slice={[0:1]}
  q1 = f32[1] slice(p), slice={[1:2]}
  t = (f32[1], f32[1]) all-to-all(q0, q1), replica_groups={{0,1}}
  t0 = f32[1] get-tuple-element(t), index=0
  t1 = f32[1] get-tuple-element(t), index=1
  ROOT out = (f32[4], f32[1], f32[1]) tuple(a, t0, t1)
})";
  auto out = RunAll(hlo, PerDevice(2, 0, [](int d) {
    return std::vector<double>{10.0 * d, 10.0 * d + 1, 10.0 * d + 2, 10.0 * d + 3};
  }));
  // Array form: device r gets block r of everyone. Tuple form: element j of
  // device r is operand r of device j.
  EXPECT_EQ(out, (PerDeviceValues{{0, 1, 10, 11, 0, 10}, {2, 3, 12, 13, 1, 11}}));
}

TEST(EvalCollectives, CollectivePermuteAndBroadcast) {
  const std::string hlo = R"(
HloModule m, replica_count=3
ENTRY e {
  p = f32[1] parameter(0)
  cp = f32[1] collective-permute(p), source_target_pairs={{0,1},{1,2}}
  cb = f32[1] collective-broadcast(p), replica_groups={{1,0,2}}
  ROOT t = (f32[1], f32[1]) tuple(cp, cb)
})";
  auto out = RunAll(hlo, PerDevice(3, 0, [](int d) { return std::vector<double>{d + 1.0}; }));
  // Device 0 is nobody's target: zeros. The broadcast root is the group's first id (1).
  EXPECT_EQ(out, (PerDeviceValues{{0, 2}, {1, 2}, {2, 2}}));
}

TEST(EvalCollectives, CrossPartitionPermuteWithChannel) {
  const std::string hlo = R"(
HloModule m, replica_count=2, num_partitions=2
ENTRY e {
  p = f32[1] parameter(0)
  ROOT cp = f32[1] collective-permute(p), channel_id=5, source_target_pairs={{0,1},{1,0}}
})";
  auto out = RunAll(hlo, Scalar1(4));
  EXPECT_EQ(out, (PerDeviceValues{{1}, {0}, {3}, {2}}));
}

TEST(EvalCollectives, AsyncForms) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=2\n", kAdd, R"(
wrapped {
  x = f32[2] parameter(0)
  ROOT rs = f32[1] reduce-scatter(x), replica_groups={{0,1}}, dimensions={0}, to_apply=add
}
ENTRY e {
  p = f32[2] parameter(0)
  ags = (f32[2], f32[4]) all-gather-start(p), dimensions={0}, replica_groups={{0,1}}
  agd = f32[4] all-gather-done(ags)
  ars = f32[2] all-reduce-start(p), replica_groups={{0,1}}, to_apply=add
  ard = f32[2] all-reduce-done(ars)
  cps = (f32[2], f32[2], u32[], u32[]) collective-permute-start(p), source_target_pairs={{0,1},{1,0}}
  cpd = f32[2] collective-permute-done(cps)
  as = ((f32[2]), f32[1], s32[]) async-start(p), calls=wrapped
  ad = f32[1] async-done(as), calls=wrapped
  ROOT t = (f32[4], f32[2], f32[2], f32[1]) tuple(agd, ard, cpd, ad)
})");
  auto out = RunAll(hlo, PerDevice(2, 0, [](int d) { return std::vector<double>{10.0 * d, 10.0 * d + 1}; }));
  EXPECT_EQ(out, (PerDeviceValues{{0, 1, 10, 11, 10, 12, 10, 11, 10}, {0, 1, 10, 11, 10, 12, 0, 1, 12}}));
}

TEST(EvalCollectives, TokenThreadedVariadicAllGather) {
  const std::string hlo = R"(
HloModule m, replica_count=2
ENTRY e {
  w = f32[1,2] parameter(0)
  tok = bf16[] parameter(1)
  ag = (f32[2,2], bf16[]) all-gather(w, tok), dimensions={0}, replica_groups={{0,1}}
  g = f32[2,2] get-tuple-element(ag), index=0
  t = bf16[] get-tuple-element(ag), index=1
  ROOT out = (f32[2,2], bf16[]) tuple(g, t)
})";
  std::string inputs = PerDevice(2, 0, [](int d) { return std::vector<double>{d + 1.0, d + 2.0}; });
  inputs += PerDevice(2, 1, [](int d) { return std::vector<double>{d * 0.5}; });
  auto out = RunAll(hlo, inputs);
  // The rank-0 operand is threaded through unchanged on every device.
  EXPECT_EQ(out, (PerDeviceValues{{1, 2, 2, 3, 0}, {1, 2, 2, 3, 0.5}}));
}

TEST(EvalCollectives, CollectiveInsideWhileLoop) {
  const std::string hlo = absl::StrCat(
      "HloModule m, replica_count=2\n", kAdd,
      testing_util::CountedLoop("f32[1]", 3, "  next = f32[1] all-reduce(v), replica_groups={{0,1}}, to_apply=add"), R"(
ENTRY e {
  p = f32[1] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[1]) tuple(z, p)
  w = (s32[], f32[1]) while(init), condition=cond, body=body
  ROOT v = f32[1] get-tuple-element(w), index=1
})");
  auto out = RunAll(hlo, PerDevice(2, 0, [](int d) { return std::vector<double>{d + 1.0}; }));
  // 1 + 2 = 3, then 6, then 12.
  EXPECT_EQ(out, (PerDeviceValues{{12}, {12}}));
}

TEST(EvalCollectives, DevicesDisagreeingOnTheNextCollectiveIsAnError) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=2\n", kAdd, R"(
branch_a {
  x = f32[1] parameter(0)
  ROOT ra = f32[1] all-reduce(x), replica_groups={{0,1}}, to_apply=add
}
branch_b {
  x = f32[1] parameter(0)
  ROOT rb = f32[1] all-reduce(x), replica_groups={{0,1}}, to_apply=add
}
ENTRY e {
  p = f32[1] parameter(0)
  id = u32[] replica-id()
  sel = s32[] convert(id)
  ROOT c = f32[1] conditional(sel, p, p), branch_computations={branch_a, branch_b}
})");
  const std::string msg = RunError(hlo, Scalar1(2));
  testing_util::ExpectContains(msg, {"mismatched collectives", "%ra", "%rb"});
}

TEST(EvalCollectives, DeviceFinishingWhileOthersWaitIsAnError) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=2\n", kAdd, R"(
with_collective {
  x = f32[1] parameter(0)
  ROOT r = f32[1] all-reduce(x), replica_groups={{0,1}}, to_apply=add
}
without {
  ROOT x = f32[1] parameter(0)
}
ENTRY e {
  p = f32[1] parameter(0)
  id = u32[] replica-id()
  sel = s32[] convert(id)
  ROOT c = f32[1] conditional(sel, p, p), branch_computations={with_collective, without}
})");
  const std::string msg = RunError(hlo, Scalar1(2));
  testing_util::ExpectContains(msg, {"%r", "1 (finished)"});
}

TEST(EvalCollectives, DeviceInNoGroupIsAnError) {
  const std::string hlo = absl::StrCat("HloModule m, replica_count=4\n", kAdd, R"(
ENTRY e {
  p = f32[1] parameter(0)
  ROOT r = f32[1] all-reduce(p), replica_groups={{0,1}}, to_apply=add
})");
  const std::string msg = RunError(hlo, Scalar1(4));
  testing_util::ExpectContains(msg, {"none of the collective's groups", "device 2"});
}

TEST(EvalCollectives, RepeatedOrOutOfRangeIdsAreErrors) {
  const std::string dup = absl::StrCat("HloModule m, replica_count=2\n", kAdd, R"(
ENTRY e {
  p = f32[1] parameter(0)
  ROOT r = f32[1] all-reduce(p), replica_groups={{0,1},{1}}, to_apply=add
})");
  EXPECT_THAT(RunError(dup, Scalar1(2)), HasSubstr("more than one group"));
  const std::string range = absl::StrCat("HloModule m, replica_count=2\n", kAdd, R"(
ENTRY e {
  p = f32[1] parameter(0)
  ROOT r = f32[1] all-reduce(p), replica_groups={{0,2}}, to_apply=add
})");
  EXPECT_THAT(RunError(range, Scalar1(2)), HasSubstr("out of range"));
}

TEST(EvalCollectives, CollectiveMatmulKernelContract) {
  const std::string hlo = R"(
HloModule m, replica_count=2
ENTRY e {
  a = f32[1,2] parameter(0)
  b = f32[2,2] parameter(1)
  k0 = f32[2,2] custom-call(a, b), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=0,tp_degree=2,num_groups=1,use_sb_to_sb=1"
  k1 = f32[4] custom-call(a, b), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=1,tp_degree=2,num_groups=1,use_sb_to_sb=0"
  ROOT t = (f32[2,2], f32[4]) tuple(k0, k1)
})";
  std::string inputs = PerDevice(2, 0, [](int d) { return std::vector<double>{d + 1.0, 2.0 * (d + 1)}; });
  inputs += "param 1 device 0 : 1 0 1 1\nparam 1 device 1 : 2 0 0 2\n";
  auto out = RunAll(hlo, inputs);
  // Gathered rows A = {{1,2},{2,4}}. Device 0, B = {{1,0},{1,1}}:
  //   R=0: A.B = {{3,2},{6,4}};  R=1: A.B^T = {{1,3},{2,6}} reshaped to [4].
  // Device 1, B = 2I: R=0 and R=1 both 2A.
  EXPECT_EQ(out, (PerDeviceValues{{3, 2, 6, 4, 1, 3, 2, 6}, {2, 4, 4, 8, 2, 4, 4, 8}}));
}

TEST(EvalCollectives, CollectiveMatmulGroupsAreContiguousDeviceBlocks) {
  const std::string hlo = R"(
HloModule m, replica_count=4
ENTRY e {
  a = f32[1,1] parameter(0)
  b = f32[1,1] constant({{1}})
  ROOT k = f32[2,1] custom-call(a, b), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=0,tp_degree=2,num_groups=2,use_sb_to_sb=1"
})";
  auto out = RunAll(hlo, Scalar1(4));
  EXPECT_EQ(out, (PerDeviceValues{{0, 1}, {0, 1}, {2, 3}, {2, 3}}));
}

TEST(EvalCollectives, CollectiveMatmulHigherRankOperandOne) {
  // R=0 takes a rank-3 operand 1 [K, n1, n2] as [K, n1*n2]; R=1 needs rank 2.
  const std::string ok = R"(
HloModule m, replica_count=2
ENTRY e {
  a = f32[1,2] parameter(0)
  b = f32[2,1,2] parameter(1)
  ROOT k = f32[2,1,2] custom-call(a, b), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=0,tp_degree=2,num_groups=1,use_sb_to_sb=1"
})";
  std::string inputs = PerDevice(2, 0, [](int d) { return std::vector<double>{d + 1.0, 2.0 * (d + 1)}; });
  inputs += "param 1 device * : 1 0 1 1\n";
  auto out = RunAll(ok, inputs);
  EXPECT_THAT(out[0], ElementsAre(3, 2, 6, 4));
  const std::string bad = R"(
HloModule m, replica_count=2
ENTRY e {
  a = f32[1,2] parameter(0)
  b = f32[1,2,2] parameter(1)
  ROOT k = f32[2,1,2] custom-call(a, b), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=1,tp_degree=2,num_groups=1,use_sb_to_sb=1"
})";
  const std::string msg = RunError(bad, inputs);
  testing_util::ExpectContains(msg, {"kernel contract", "%k"});
}

TEST(EvalCollectives, CollectiveMatmulConfigErrors) {
  const std::string bad_cover = R"(
HloModule m, replica_count=4
ENTRY e {
  a = f32[1,1] parameter(0)
  b = f32[1,1] constant({{1}})
  ROOT k = f32[2,1] custom-call(a, b), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=0,tp_degree=2,num_groups=1,use_sb_to_sb=1"
})";
  EXPECT_THAT(RunError(bad_cover, Scalar1(4)), HasSubstr("does not cover"));
  auto c = ParseCollectiveMatmulConfig("rhs_contracting_dim=1,tp_degree=8,num_groups=4,use_sb_to_sb=0");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rhs_contracting_dim, 1);
  EXPECT_EQ(c->tp_degree, 8);
  EXPECT_EQ(c->num_groups, 4);
  EXPECT_EQ(c->use_sb_to_sb, 0);
  EXPECT_FALSE(ParseCollectiveMatmulConfig("rhs_contracting_dim=1,tp_degree=8").ok());
  EXPECT_FALSE(ParseCollectiveMatmulConfig("rhs_contracting_dim=1,tp_degree=x,num_groups=1,use_sb_to_sb=0").ok());
}

TEST(EvalCollectives, GridInferredFromGroupsWithoutHeader) {
  auto m = ParseHloModule(absl::StrCat("HloModule m\n", kAdd, R"(
ENTRY e {
  p = f32[1] parameter(0)
  ROOT r = f32[1] all-reduce(p), channel_id=1, replica_groups={{0,1,2},{3,4,5}}, use_global_device_ids=true, to_apply=add
})"));
  ASSERT_TRUE(m.ok());
  auto grid = ResolveDeviceGrid(**m, InterpreterOptions{});
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->replica_count, 1);
  EXPECT_EQ(grid->num_partitions, 6);
  auto r = RunModule(**m, InterpreterOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs.size(), 6u);
}

TEST(EvalCollectives, DevicesOverrideFollowsTheHeader) {
  auto m = ParseHloModule(R"(
HloModule m, num_partitions=8
ENTRY e {
  ROOT p = u32[] partition-id()
})");
  ASSERT_TRUE(m.ok());
  InterpreterOptions options;
  options.devices = 4;
  auto grid = ResolveDeviceGrid(**m, options);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->replica_count, 1);
  EXPECT_EQ(grid->num_partitions, 4);
}

}  // namespace
}  // namespace eval
}  // namespace hilo
