// The mapping of each attribute between XLA's HloInstructionProto fields
// (written here by hand from hlo.proto / xla_data.proto) and hilo's IR and
// text; unknown fields carried through; malformed protos rejected.
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/proto/module_file.h"
#include "hilo/proto/proto_text_attributes.h"
#include "hilo/proto/wire_split.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A module whose entry computation holds `instructions` (text-proto
// HloInstructionProto bodies) with the last one as root; computation 1 is
// `%add` (two f32 parameters), for instructions that call one.
xla::HloModuleProto ModuleProto(const std::string& instructions, int64_t root_id) {
  const std::string text = R"pb(
    name: "m"
    computations {
      name: "add"
      id: 1
      root_id: 103
      instructions { name: "a" opcode: "parameter" shape { element_type: F32 } id: 101 }
      instructions {
        name: "b" opcode: "parameter" shape { element_type: F32 } id: 102 parameter_number: 1
      }
      instructions {
        name: "s" opcode: "add" shape { element_type: F32 } id: 103 operand_ids: 101 operand_ids: 102
      }
    }
    computations { name: "main" id: 2 root_id: )pb" +
                           std::to_string(root_id) + " " + instructions + R"pb( }
    entry_computation_id: 2)pb";
  xla::HloModuleProto proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto)) << text;
  return proto;
}

// The text of instruction `name` after decoding.
std::string InstructionText(const std::string& instructions, int64_t root_id,
                            const std::string& name) {
  xla::HloModuleProto proto = ModuleProto(instructions, root_id);
  absl::StatusOr<std::unique_ptr<HloModule>> module = HloModuleFromProto(proto);
  if (!module.ok()) return "error: " + std::string(module.status().message());
  for (HloComputation* c : (*module)->computations()) {
    for (HloInstruction* inst : c->instructions()) {
      if (inst->name() == name) return PrintHloInstruction(*inst);
    }
  }
  return "not found";
}

constexpr char kParam[] =
    R"pb(instructions { name: "p" opcode: "parameter" shape { element_type: F32 dimensions: 8 dimensions: 4 layout { minor_to_major: 1 minor_to_major: 0 } } id: 1 })pb";

TEST(ProtoConvertTest, ShapesAndLayouts) {
  EXPECT_EQ(InstructionText(R"pb(instructions {
                                   name: "p" opcode: "parameter" id: 1
                                   shape {
                                     element_type: BF16 dimensions: 4 dimensions: 8 dimensions: -9223372036854775808
                                     is_dynamic_dimension: false is_dynamic_dimension: true is_dynamic_dimension: true
                                   }
                                 })pb",
                            1, "p"),
            "%p = bf16[4,<=8,?] parameter(0)");
  EXPECT_EQ(InstructionText(R"pb(instructions {
                                   name: "p" opcode: "parameter" id: 1
                                   shape {
                                     element_type: F32 dimensions: 256 dimensions: 128
                                     layout {
                                       minor_to_major: 1 minor_to_major: 0
                                       tiles { dimensions: 8 dimensions: 128 }
                                       tiles { dimensions: 2 dimensions: 1 }
                                       element_size_in_bits: 32 memory_space: 1
                                     }
                                   }
                                 })pb",
                            1, "p"),
            "%p = f32[256,128]{1,0:T(8,128)(2,1)E(32)S(1)} parameter(0)");
  EXPECT_EQ(InstructionText(R"pb(instructions {
                                   name: "p" opcode: "parameter" id: 1
                                   shape {
                                     element_type: TUPLE
                                     tuple_shapes { element_type: S32 }
                                     tuple_shapes { element_type: TOKEN }
                                   }
                                 })pb",
                            1, "p"),
            "%p = (s32[], token[]) parameter(0)");
}

TEST(ProtoConvertTest, Literals) {
  EXPECT_EQ(InstructionText(R"pb(instructions {
                                   name: "c" opcode: "constant" id: 1
                                   shape { element_type: S32 dimensions: 2 dimensions: 2 }
                                   literal { shape { element_type: S32 dimensions: 2 dimensions: 2 } s32s: 1 s32s: 2 s32s: 3 s32s: -4 }
                                 })pb",
                            1, "c"),
            "%c = s32[2,2] constant({ {1, 2}, {3, -4} })");
  EXPECT_EQ(InstructionText(R"pb(instructions {
                                   name: "c" opcode: "constant" id: 1 shape { element_type: PRED }
                                   literal { shape { element_type: PRED } preds: true }
                                 })pb",
                            1, "c"),
            "%c = pred[] constant(true)");
  // bf16 1.5 = 0x3fc0 and -inf = 0xff80, little endian.
  EXPECT_EQ(InstructionText(R"pb(instructions {
                                   name: "c" opcode: "constant" id: 1 shape { element_type: BF16 dimensions: 2 }
                                   literal { shape { element_type: BF16 dimensions: 2 } bf16s: "\xc0\x3f\x80\xff" }
                                 })pb",
                            1, "c"),
            "%c = bf16[2] constant({1.5, -inf})");
  // f16 0.5 = 0x3800.
  EXPECT_EQ(InstructionText(R"pb(instructions {
                                   name: "c" opcode: "constant" id: 1 shape { element_type: F16 }
                                   literal { shape { element_type: F16 } f16s: "\x00\x38" }
                                 })pb",
                            1, "c"),
            "%c = f16[] constant(0.5)");
  EXPECT_EQ(InstructionText(R"pb(instructions {
                                   name: "c" opcode: "constant" id: 1
                                   shape { element_type: TUPLE tuple_shapes { element_type: U8 } tuple_shapes { element_type: F64 } }
                                   literal {
                                     shape { element_type: TUPLE tuple_shapes { element_type: U8 } tuple_shapes { element_type: F64 } }
                                     tuple_literals { shape { element_type: U8 } u8s: "\xff" }
                                     tuple_literals { shape { element_type: F64 } f64s: 0.1 }
                                   }
                                 })pb",
                            1, "c"),
            "%c = (u8[], f64[]) constant((255, 0.1))");
  // Too few values for the shape.
  EXPECT_THAT(InstructionText(R"pb(instructions {
                                     name: "c" opcode: "constant" id: 1 shape { element_type: S32 dimensions: 3 }
                                     literal { shape { element_type: S32 dimensions: 3 } s32s: 1 }
                                   })pb",
                              1, "c"),
              HasSubstr("error: computation main, instruction c: literal has 1 values for 3 elements"));
}

TEST(ProtoConvertTest, CollectiveFields) {
  const std::string param = kParam;
  // The deprecated replica_groups field, channel_id, use_global_device_ids, to_apply.
  EXPECT_EQ(InstructionText(param + R"pb(instructions {
                                           name: "ar" opcode: "all-reduce" id: 2 operand_ids: 1
                                           shape { element_type: F32 dimensions: 8 dimensions: 4 layout { minor_to_major: 1 minor_to_major: 0 } }
                                           channel_id: 5 use_global_device_ids: true
                                           replica_groups { replica_ids: 0 replica_ids: 1 }
                                           replica_groups { replica_ids: 2 replica_ids: 3 }
                                           called_computation_ids: 1
                                         })pb",
                            2, "ar"),
            "%ar = f32[8,4]{1,0} all-reduce(f32[8,4]{1,0} %p), channel_id=5, "
            "replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add");
  // The device list, iota form, with and without a transpose.
  EXPECT_EQ(InstructionText(param + R"pb(instructions {
                                           name: "ag" opcode: "all-gather" id: 2 operand_ids: 1 dimensions: 0
                                           shape { element_type: F32 dimensions: 32 dimensions: 4 }
                                           collective_device_list { iota_replica_group_list {
                                             num_replica_groups: 2 num_devices_per_group: 4
                                             iota_reshape_dims: 4 iota_reshape_dims: 2
                                             iota_transpose_perm: 1 iota_transpose_perm: 0 } }
                                         })pb",
                            2, "ag"),
            "%ag = f32[32,4] all-gather(f32[8,4]{1,0} %p), dimensions={0}, replica_groups=[2,4]<=[4,2]T(1,0)");
  EXPECT_THAT(InstructionText(param + R"pb(instructions {
                                             name: "ag" opcode: "all-gather" id: 2 operand_ids: 1 dimensions: 0
                                             shape { element_type: F32 dimensions: 32 dimensions: 4 }
                                             collective_device_list { iota_replica_group_list {
                                               num_replica_groups: 1 num_devices_per_group: 4
                                               iota_reshape_dims: 4 iota_transpose_perm: 0 } }
                                           })pb",
                              2, "ag"),
              HasSubstr("replica_groups=[1,4]<=[4]"));
  // No groups: XLA prints `{}`; channel_id 0 is no channel.
  EXPECT_EQ(InstructionText(param + R"pb(instructions {
                                           name: "ar" opcode: "all-reduce" id: 2 operand_ids: 1 channel_id: 0
                                           shape { element_type: F32 dimensions: 8 dimensions: 4 }
                                           called_computation_ids: 1
                                         })pb",
                            2, "ar"),
            "%ar = f32[8,4] all-reduce(f32[8,4]{1,0} %p), replica_groups={}, to_apply=%add");
  EXPECT_EQ(InstructionText(param + R"pb(instructions {
                                           name: "cp" opcode: "collective-permute" id: 2 operand_ids: 1 channel_id: 3
                                           shape { element_type: F32 dimensions: 8 dimensions: 4 }
                                           source_target_pairs { source: 0 target: 1 }
                                           source_target_pairs { source: 1 target: 0 }
                                         })pb",
                            2, "cp"),
            "%cp = f32[8,4] collective-permute(f32[8,4]{1,0} %p), channel_id=3, source_target_pairs={{0,1},{1,0}}");
}

// Writes `module` as a binary and as a text proto and reads both back; each
// prints as `module` does. Returns the module read from the binary form.
std::unique_ptr<HloModule> ExpectProtoRoundTrips(const HloModule& module) {
  std::unique_ptr<HloModule> from_binary;
  for (ModuleFormat f : {ModuleFormat::kProto, ModuleFormat::kProtoText}) {
    auto bytes = SerializeModule(module, f);
    EXPECT_TRUE(bytes.ok()) << bytes.status().message();
    if (!bytes.ok()) return nullptr;
    auto back = LoadModule(*bytes, f == ModuleFormat::kProto ? "m.pb" : "m.pbtxt");
    EXPECT_TRUE(back.ok()) << back.status().message();
    if (!back.ok()) return nullptr;
    EXPECT_EQ(PrintHloModule(*back->module), PrintHloModule(module));
    if (f == ModuleFormat::kProto) from_binary = std::move(back->module);
  }
  return from_binary;
}

TEST(ProtoConvertTest, ChannelIdZeroSurvivesAsWritten) {
  // The text's engaged channel_id=0 has no proto value of its own: hilo's
  // attribute order carries it.
  const char* text = R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT ag = f32[4] all-gather(p), channel_id=0, replica_groups={}, dimensions={0}
})";
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok());
  std::unique_ptr<HloModule> back = ExpectProtoRoundTrips(**module);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->entry_computation()->root_instruction()->channel_id(), std::optional<int64_t>(0));
}

TEST(ProtoConvertTest, Sharding) {
  const std::string param = kParam;
  auto with = [&](const std::string& sharding) {
    return InstructionText(param + R"pb(instructions { name: "c" opcode: "copy" id: 2 operand_ids: 1
                                          shape { element_type: F32 dimensions: 8 dimensions: 4 }
                                          sharding { )pb" + sharding + " } }",
                           2, "c");
  };
  EXPECT_THAT(with("type: REPLICATED"), HasSubstr("sharding={replicated}"));
  EXPECT_THAT(with("type: MAXIMAL tile_assignment_dimensions: 1 tile_assignment_devices: 3"),
              HasSubstr("sharding={maximal device=3}"));
  EXPECT_THAT(with("type: MANUAL"), HasSubstr("sharding={manual}"));
  EXPECT_THAT(with("type: OTHER tile_assignment_dimensions: 2 tile_assignment_dimensions: 1 "
                   "tile_assignment_devices: 1 tile_assignment_devices: 0"),
              HasSubstr("sharding={devices=[2,1]1,0}"));
  EXPECT_THAT(with("type: OTHER tile_assignment_dimensions: 2 tile_assignment_dimensions: 2 "
                   "iota_reshape_dims: 4 iota_transpose_perm: 0 replicate_on_last_tile_dim: true"),
              HasSubstr("sharding={devices=[2,2]<=[4] last_tile_dim_replicate}"));
  EXPECT_THAT(with("type: TUPLE tuple_shardings { type: REPLICATED } tuple_shardings { type: MAXIMAL "
                   "tile_assignment_dimensions: 1 tile_assignment_devices: 0 }"),
              HasSubstr("sharding={{replicated}, {maximal device=0}}"));
}

TEST(ProtoConvertTest, DimensionNumbersWindowsAndFlags) {
  const std::string param = kParam;
  EXPECT_EQ(InstructionText(param + R"pb(instructions { name: "d" opcode: "dot" id: 2 operand_ids: 1 operand_ids: 1
                                           shape { element_type: F32 dimensions: 8 dimensions: 8 }
                                           dot_dimension_numbers { lhs_contracting_dimensions: 1 rhs_contracting_dimensions: 1 }
                                           precision_config { operand_precision: HIGHEST operand_precision: DEFAULT } })pb",
                            2, "d"),
            "%d = f32[8,8] dot(f32[8,4]{1,0} %p, f32[8,4]{1,0} %p), lhs_contracting_dims={1}, "
            "rhs_contracting_dims={1}, operand_precision={highest,default}");
  EXPECT_THAT(InstructionText(param + R"pb(instructions { name: "cv" opcode: "convolution" id: 2 operand_ids: 1 operand_ids: 1
                                             shape { element_type: F32 dimensions: 8 dimensions: 4 }
                                             window { dimensions { size: 3 stride: 2 padding_low: 1 padding_high: 1 window_dilation: 1 base_dilation: 1 } }
                                             convolution_dimension_numbers {
                                               input_batch_dimension: 0 input_feature_dimension: 1 input_spatial_dimensions: 2
                                               kernel_input_feature_dimension: 1 kernel_output_feature_dimension: 0 kernel_spatial_dimensions: 2
                                               output_batch_dimension: 0 output_feature_dimension: 1 output_spatial_dimensions: 2 }
                                             feature_group_count: 2 })pb",
                              2, "cv"),
              HasSubstr("window={size=3 stride=2 pad=1_1}, dim_labels=bf0_oi0->bf0, feature_group_count=2"));
  EXPECT_THAT(InstructionText(param + R"pb(instructions { name: "g" opcode: "gather" id: 2 operand_ids: 1 operand_ids: 1
                                             shape { element_type: F32 dimensions: 8 dimensions: 4 }
                                             gather_dimension_numbers { offset_dims: 1 collapsed_slice_dims: 0 start_index_map: 0 index_vector_dim: 1 }
                                             gather_slice_sizes: 1 gather_slice_sizes: 4 indices_are_sorted: true })pb",
                              2, "g"),
              HasSubstr("offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                        "slice_sizes={1,4}, indices_are_sorted=true"));
  EXPECT_THAT(InstructionText(param + R"pb(instructions { name: "sl" opcode: "slice" id: 2 operand_ids: 1
                                             shape { element_type: F32 dimensions: 4 dimensions: 2 }
                                             slice_dimensions { start: 0 limit: 8 stride: 2 }
                                             slice_dimensions { start: 1 limit: 3 stride: 1 } })pb",
                              2, "sl"),
              HasSubstr("slice={[0:8:2], [1:3]}"));
  EXPECT_THAT(InstructionText(param + R"pb(instructions { name: "c" opcode: "compare" id: 2 operand_ids: 1 operand_ids: 1
                                             shape { element_type: PRED dimensions: 8 dimensions: 4 }
                                             comparison_direction: "LT" })pb",
                              2, "c"),
              HasSubstr("direction=LT"));
  EXPECT_THAT(InstructionText(param + R"pb(instructions { name: "pd" opcode: "pad" id: 2 operand_ids: 1 operand_ids: 1
                                             shape { element_type: F32 dimensions: 10 dimensions: 4 }
                                             padding_config { dimensions { edge_padding_low: 1 edge_padding_high: 1 } dimensions { } } })pb",
                              2, "pd"),
              HasSubstr("padding=1_1x0_0"));
}

TEST(ProtoConvertTest, CustomCallFrontendAttributesMetadataAndControl) {
  const std::string param = kParam;
  const std::string text = InstructionText(
      param + R"pb(instructions { name: "cc" opcode: "custom-call" id: 2 operand_ids: 1 control_predecessor_ids: 1
                     shape { element_type: F32 dimensions: 8 dimensions: 4 }
                     custom_call_target: "AwsNeuronCustomOp" custom_call_api_version: API_VERSION_TYPED_FFI
                     backend_config: "cfg" custom_call_has_side_effect: true
                     frontend_attributes { map { key: "z" value: "1" } map { key: "a" value: "x y" } }
                     metadata { op_type: "Foo" op_name: "jit(f)/foo" source_file: "f.py" source_line: 7 } })pb",
      2, "cc");
  EXPECT_EQ(text,
            "%cc = f32[8,4] custom-call(f32[8,4]{1,0} %p), custom_call_target=\"AwsNeuronCustomOp\", "
            "api_version=API_VERSION_TYPED_FFI, frontend_attributes={a=\"x y\",z=\"1\"}, "
            "control-predecessors={%p}, metadata={op_type=\"Foo\" op_name=\"jit(f)/foo\" "
            "source_file=\"f.py\" source_line=7}, backend_config=\"cfg\", custom_call_has_side_effect=true");
}

TEST(ProtoConvertTest, CalledComputationsAndXlaIds) {
  // While: condition then body; 64-bit ids with the computation id in the
  // high bits, operands given by their local (low 32-bit) ids.
  xla::HloModuleProto proto;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    name: "w"
    computations { name: "cond" id: 1 root_id: 4294967298
      instructions { name: "cp" opcode: "parameter" shape { element_type: S32 } id: 4294967297 }
      instructions { name: "lt" opcode: "compare" shape { element_type: PRED } id: 4294967298
                     operand_ids: 1 operand_ids: 1 comparison_direction: "LT" } }
    computations { name: "body" id: 2 root_id: 8589934593
      instructions { name: "bp" opcode: "parameter" shape { element_type: S32 } id: 8589934593 } }
    computations { name: "main" id: 3 root_id: 12884901890
      instructions { name: "x" opcode: "parameter" shape { element_type: S32 } id: 12884901889 }
      instructions { name: "wh" opcode: "while" shape { element_type: S32 } id: 12884901890
                     operand_ids: 1 called_computation_ids: 1 called_computation_ids: 2 } }
    entry_computation_name: "main")pb",
                                                           &proto));
  auto module = HloModuleFromProto(proto);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(PrintHloInstruction(*(*module)->entry_computation()->root_instruction()),
            "%wh = s32[] while(s32[] %x), condition=%cond, body=%body");
}

// A parameter and a copy carrying `operand_shapes_with_layout`, a field
// hlo.proto declares and hilo does not map.
xla::HloModuleProto CopyWithUnmappedFieldProto() {
  return ModuleProto(
      std::string(kParam) + R"pb(instructions { name: "o" opcode: "copy" id: 2 operand_ids: 1
                                   shape { element_type: F32 dimensions: 8 dimensions: 4 }
                                   operand_shapes_with_layout { element_type: F32 } })pb",
      2);
}

TEST(ProtoConvertTest, UnknownAndUnmappedFieldsSurvive) {
  xla::HloModuleProto proto = CopyWithUnmappedFieldProto();
  // An instruction field no version of hlo.proto hilo knows (number 999)
  // and a module field (number 998), as unknown fields of the wire format.
  proto.mutable_computations(1)->mutable_instructions(1)->GetReflection()->MutableUnknownFields(
      proto.mutable_computations(1)->mutable_instructions(1))->AddVarint(999, 42);
  proto.GetReflection()->MutableUnknownFields(&proto)->AddLengthDelimited(998, "keep me");
  const std::string bytes = proto.SerializeAsString();
  auto loaded = LoadModule(bytes, "m.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto again = SerializeModule(*loaded->module, ModuleFormat::kProto);
  ASSERT_TRUE(again.ok());
  xla::HloModuleProto out;
  ASSERT_TRUE(out.ParseFromString(*again));
  const xla::HloInstructionProto& o = out.computations(1).instructions(1);
  EXPECT_EQ(o.name(), "o");
  ASSERT_EQ(o.operand_shapes_with_layout_size(), 1);
  const auto& unknown = o.GetReflection()->GetUnknownFields(o);
  ASSERT_EQ(unknown.field_count(), 1);
  EXPECT_EQ(unknown.field(0).number(), 999);
  EXPECT_EQ(unknown.field(0).varint(), 42u);
  const auto& module_unknown = out.GetReflection()->GetUnknownFields(out);
  ASSERT_EQ(module_unknown.field_count(), 1);
  EXPECT_EQ(module_unknown.field(0).length_delimited(), "keep me");
  // The text format would print them by number, which does not read back:
  // refused, naming the first one (the module's own fields come first).
  auto text = SerializeModule(*loaded->module, ModuleFormat::kProtoText);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("field 998 of xla.HloModuleProto"));
}

TEST(ProtoConvertTest, UndeclaredFieldDeepInsideRefusesTextProto) {
  // Only an instruction carries one; a declared field hilo does not map
  // (operand_shapes_with_layout) is fine in text and reads back.
  xla::HloModuleProto proto = CopyWithUnmappedFieldProto();
  auto declared_only = LoadModule(proto.SerializeAsString(), "m.pb");
  ASSERT_TRUE(declared_only.ok()) << declared_only.status().message();
  auto text = SerializeModule(*declared_only->module, ModuleFormat::kProtoText);
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto reread = LoadModule(*text, "m.pbtxt");
  ASSERT_TRUE(reread.ok()) << reread.status().message();
  EXPECT_EQ(PrintHloModule(*reread->module), PrintHloModule(*declared_only->module));

  xla::HloInstructionProto* copy = proto.mutable_computations(1)->mutable_instructions(1);
  copy->GetReflection()->MutableUnknownFields(copy)->AddFixed32(4321, 7);
  auto loaded = LoadModule(proto.SerializeAsString(), "m.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  text = SerializeModule(*loaded->module, ModuleFormat::kProtoText);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("field 4321 of xla.HloInstructionProto"));
}

TEST(ProtoConvertTest, DeviceAssignmentGivesReplicaAndPartitionCounts) {
  xla::HloModuleProto proto = ModuleProto(kParam, 1);
  proto.mutable_device_assignment()->set_replica_count(2);
  proto.mutable_device_assignment()->set_computation_count(4);
  auto module = HloModuleFromProto(proto);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ((*module)->replica_count(), std::optional<int64_t>(2));
  EXPECT_EQ((*module)->num_partitions(), std::optional<int64_t>(4));
  EXPECT_THAT(PrintHloModule(**module), HasSubstr("HloModule m, replica_count=2, num_partitions=4"));
}

// ---------------------------------------------------------------------------
// Opcode-specific fields, from XLA's messages (hlo.proto / xla_data.proto):
// each decodes to the attribute XLA's printer writes for it.
TEST(ProtoConvertTest, OpcodeFieldsDecodeAsXlaPrintsThem) {
  const std::string param = kParam;
  auto text = [&](const std::string& inst, const std::string& name) {
    return InstructionText(param + inst, 2, name);
  };
  EXPECT_THAT(text(R"pb(instructions { name: "r" opcode: "rng" id: 2 operand_ids: 1 operand_ids: 1
                        shape { element_type: F32 dimensions: 8 } distribution: RNG_NORMAL })pb",
                   "r"),
              HasSubstr("), distribution=rng_normal"));
  // rng-bit-generator: its algorithm is printed always, the default too.
  const std::string bg = R"pb(instructions { name: "g" opcode: "rng-bit-generator" id: 2 operand_ids: 1
                                shape { element_type: TUPLE tuple_shapes { element_type: U64 dimensions: 2 }
                                        tuple_shapes { element_type: U32 dimensions: 8 } } )pb";
  EXPECT_THAT(text(bg + "rng_algorithm: RNG_THREE_FRY }", "g"), HasSubstr("), algorithm=rng_three_fry"));
  EXPECT_THAT(text(bg + "}", "g"), HasSubstr("), algorithm=rng_default"));
  EXPECT_THAT(text(R"pb(instructions { name: "f" opcode: "fft" id: 2 operand_ids: 1
                        shape { element_type: C64 dimensions: 8 dimensions: 3 }
                        fft_type: RFFT fft_length: 4 })pb",
                   "f"),
              HasSubstr("), fft_type=RFFT, fft_length={4}"));
  EXPECT_THAT(text(R"pb(instructions { name: "t" opcode: "triangular-solve" id: 2 operand_ids: 1 operand_ids: 1
                        shape { element_type: F32 dimensions: 8 dimensions: 4 }
                        triangular_solve_options { lower: true transpose_a: NO_TRANSPOSE } })pb",
                   "t"),
              HasSubstr("), lower=true, transpose_a=NO_TRANSPOSE"));
  EXPECT_THAT(text(R"pb(instructions { name: "c" opcode: "cholesky" id: 2 operand_ids: 1
                        shape { element_type: F32 dimensions: 8 dimensions: 4 }
                        cholesky_options { lower: true } })pb",
                   "c"),
              HasSubstr("), lower=true"));
  EXPECT_THAT(text(R"pb(instructions { name: "bn" opcode: "batch-norm-inference" id: 2
                        operand_ids: 1 operand_ids: 1 operand_ids: 1 operand_ids: 1 operand_ids: 1
                        shape { element_type: F32 dimensions: 8 dimensions: 4 }
                        epsilon: 0.001 feature_index: 1 })pb",
                   "bn"),
              HasSubstr("), epsilon=0.001, feature_index=1"));
  // A dot's algorithm; XLA writes DEFAULT precisions and prints none.
  const std::string dot = text(R"pb(instructions { name: "d" opcode: "dot" id: 2 operand_ids: 1 operand_ids: 1
                                      shape { element_type: F32 dimensions: 8 dimensions: 8 }
                                      dot_dimension_numbers { lhs_contracting_dimensions: 1 rhs_contracting_dimensions: 1 }
                                      precision_config { operand_precision: DEFAULT operand_precision: DEFAULT
                                                         algorithm: ALG_DOT_BF16_BF16_F32 } })pb",
                               "d");
  EXPECT_THAT(dot, HasSubstr("rhs_contracting_dims={1}, algorithm=dot_bf16_bf16_f32"));
  EXPECT_THAT(dot, Not(HasSubstr("operand_precision")));
  EXPECT_THAT(text(R"pb(instructions { name: "cc" opcode: "custom-call" id: 2 operand_ids: 1 operand_ids: 1
                        shape { element_type: F32 dimensions: 8 dimensions: 4 }
                        custom_call_target: "foo" custom_call_api_version: API_VERSION_ORIGINAL
                        output_operand_aliasing { output_shape_index: 0 operand_index: 1 }
                        output_operand_aliasing { output_shape_index: 1 operand_index: 0 operand_shape_index: 0 operand_shape_index: 2 }
                        custom_call_schedule: SCHEDULE_LATEST })pb",
                   "cc"),
              HasSubstr("output_to_operand_aliasing={{0}: (1, {}), {1}: (0, {0,2})}, schedule=SCHEDULE_LATEST"));
  // Layout constraints: operand_shapes_with_layout (and constrain_layout,
  // which a custom-call's text does not print).
  const std::string constrained = text(R"pb(instructions { name: "lc" opcode: "custom-call" id: 2 operand_ids: 1
                                           shape { element_type: F32 dimensions: 8 dimensions: 4 layout { minor_to_major: 0 minor_to_major: 1 } }
                                           custom_call_target: "foo" custom_call_api_version: API_VERSION_ORIGINAL constrain_layout: true
                                           operand_shapes_with_layout { element_type: F32 dimensions: 8 dimensions: 4
                                                                        layout { minor_to_major: 0 minor_to_major: 1 } } })pb",
                                       "lc");
  EXPECT_THAT(constrained, HasSubstr("operand_layout_constraints={f32[8,4]{0,1}}"));
  EXPECT_THAT(constrained, Not(HasSubstr("constrain_layout")));
  EXPECT_THAT(InstructionText(param + R"pb(instructions { name: "tok" opcode: "after-all" id: 2 shape { element_type: TOKEN } }
                                           instructions { name: "of" opcode: "outfeed" id: 3 operand_ids: 1 operand_ids: 2
                                                          shape { element_type: TOKEN }
                                                          outfeed_shape { element_type: TUPLE tuple_shapes { element_type: U32 dimensions: 3 layout { minor_to_major: 0 } }
                                                                          tuple_shapes { element_type: PRED } } })pb",
                              3, "of"),
              HasSubstr("outfeed_shape=(u32[3]{0}, pred[])"));
  EXPECT_THAT(InstructionText(R"pb(instructions { name: "p" opcode: "parameter" id: 1
                                   shape { element_type: TUPLE tuple_shapes { element_type: F32 } tuple_shapes { element_type: S32 } }
                                   parameter_replication { replicated_at_leaf_buffers: false replicated_at_leaf_buffers: true } })pb",
                              1, "p"),
              HasSubstr("parameter(0), parameter_replication={false,true}"));
  // A sharding domain: `{}` is an absent sharding.
  EXPECT_THAT(text(R"pb(instructions { name: "dm" opcode: "domain" id: 2 operand_ids: 1
                        shape { element_type: F32 dimensions: 8 dimensions: 4 }
                        domain_entry_sharding { type: MAXIMAL tile_assignment_dimensions: 1 tile_assignment_devices: 1 } })pb",
                   "dm"),
              HasSubstr("), domain={kind=\"sharding\", entry={maximal device=1}, exit={}}"));
  // An iota's dimension is the one entry of `dimensions`.
  EXPECT_EQ(InstructionText(R"pb(instructions { name: "io" opcode: "iota" id: 1 dimensions: 1
                                 shape { element_type: S32 dimensions: 8 dimensions: 4 } })pb",
                            1, "io"),
            "%io = s32[8,4] iota(), iota_dimension=1");
  EXPECT_THAT(InstructionText(R"pb(instructions { name: "st" opcode: "rng-get-and-update-state" id: 1
                                   shape { element_type: U64 dimensions: 2 } delta: 4096 })pb",
                              1, "st"),
              HasSubstr("rng-get-and-update-state(), delta=4096"));
  EXPECT_THAT(text(R"pb(instructions { name: "cs" opcode: "copy-start" id: 2 operand_ids: 1
                        shape { element_type: TUPLE tuple_shapes { element_type: F32 dimensions: 8 dimensions: 4 }
                                tuple_shapes { element_type: F32 dimensions: 8 dimensions: 4 } tuple_shapes { element_type: U32 } }
                        cross_program_prefetch_index: 0 })pb",
                   "cs"),
              HasSubstr("), cross_program_prefetch_index=0"));
}

const xla::HloInstructionProto* FindInstruction(const xla::HloModuleProto& proto, absl::string_view name) {
  for (const xla::HloComputationProto& c : proto.computations()) {
    for (const xla::HloInstructionProto& i : c.instructions()) {
      if (i.name() == name) return &i;
    }
  }
  return nullptr;
}

// The same fields, from text: written into XLA's fields (what XLA reads),
// not only into hilo's own `hilo_text`.
TEST(ProtoConvertTest, OpcodeFieldsEncodeToXlaFields) {
  const char* text = R"(HloModule m

ENTRY e {
  p0 = f32[8] parameter(0), parameter_replication={true}
  m = f32[4,4] parameter(1)
  lo = f32[] parameter(2)
  r = f32[8] rng(lo, lo), distribution=rng_uniform
  seed = u64[2] parameter(3)
  bg = (u64[2], u32[8]) rng-bit-generator(seed), algorithm=rng_philox
  c = c64[8] convert(p0)
  f = c64[8] fft(c), fft_type=IFFT, fft_length={8}
  ch = f32[4,4] cholesky(m), lower=true
  ts = f32[4,4] triangular-solve(m, m), left_side=true, lower=true, unit_diagonal=true, transpose_a=ADJOINT
  d = f32[4,4] dot(m, m), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_f32_f32_f32
  cc = f32[8] custom-call(p0, p0), custom_call_target="foo", output_to_operand_aliasing={{}: (1, {})}, schedule=SCHEDULE_EARLIEST
  st = u64[2] rng-get-and-update-state(), delta=7
  bn = f32[4,4] batch-norm-inference(m, p0, p0, p0, p0), epsilon=1e-05, feature_index=1
  io = s32[8,4] iota(), iota_dimension=1
  dm = f32[8] domain(p0), domain={kind="sharding", entry={{maximal device=0}, {maximal device=1}}, exit={maximal device=1}}
  lc = f32[4,4]{0,1} custom-call(m, p0), custom_call_target="bar", operand_layout_constraints={f32[4,4]{0,1}, f32[8]{0}}
  tok = token[] after-all()
  of = token[] outfeed(p0, tok), outfeed_shape=f32[8]{0}
  cs = (f32[8], f32[8], u32[]) copy-start(p0), cross_program_prefetch_index=0
  ROOT cd = f32[8] copy-done(cs)
})";
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto proto = HloModuleToProto(**module);
  ASSERT_TRUE(proto.ok()) << proto.status().message();
  auto inst = [&](absl::string_view name) -> const xla::HloInstructionProto& {
    const xla::HloInstructionProto* i = FindInstruction(*proto, name);
    EXPECT_NE(i, nullptr) << name;
    static const xla::HloInstructionProto empty;
    if (i == nullptr) return empty;
    // Nothing of these kept only as hilo's text.
    EXPECT_EQ(i->hilo_text().attributes_size(), 0) << i->hilo_text().DebugString();
    return *i;
  };
  ASSERT_EQ(inst("p0").parameter_replication().replicated_at_leaf_buffers_size(), 1);
  EXPECT_TRUE(inst("p0").parameter_replication().replicated_at_leaf_buffers(0));
  EXPECT_EQ(inst("r").distribution(), xla::RNG_UNIFORM);
  EXPECT_EQ(inst("bg").rng_algorithm(), xla::RNG_PHILOX);
  EXPECT_EQ(inst("f").fft_type(), xla::IFFT);
  EXPECT_THAT(inst("f").fft_length(), ::testing::ElementsAre(8));
  EXPECT_TRUE(inst("ch").cholesky_options().lower());
  const xla::TriangularSolveOptions& ts = inst("ts").triangular_solve_options();
  EXPECT_TRUE(ts.left_side() && ts.lower() && ts.unit_diagonal());
  EXPECT_EQ(ts.transpose_a(), xla::TriangularSolveOptions::ADJOINT);
  EXPECT_EQ(inst("d").precision_config().algorithm(), xla::PrecisionConfig::ALG_DOT_F32_F32_F32);
  const xla::HloInstructionProto& cc = inst("cc");
  EXPECT_EQ(cc.custom_call_schedule(), xla::SCHEDULE_EARLIEST);
  ASSERT_EQ(cc.output_operand_aliasing_size(), 1);
  EXPECT_EQ(cc.output_operand_aliasing(0).output_shape_index_size(), 0);
  EXPECT_EQ(cc.output_operand_aliasing(0).operand_index(), 1);
  EXPECT_EQ(cc.output_operand_aliasing(0).operand_shape_index_size(), 0);
  EXPECT_EQ(inst("st").delta(), 7);
  EXPECT_FLOAT_EQ(inst("bn").epsilon(), 1e-5f);
  EXPECT_THAT(inst("io").dimensions(), ::testing::ElementsAre(1));
  const xla::HloInstructionProto& dm = inst("dm");
  EXPECT_EQ(dm.domain_entry_sharding().type(), xla::OpSharding::TUPLE);
  ASSERT_EQ(dm.domain_entry_sharding().tuple_shardings_size(), 2);
  EXPECT_THAT(dm.domain_exit_sharding().tile_assignment_devices(), ::testing::ElementsAre(1));
  const xla::HloInstructionProto& lc = inst("lc");
  EXPECT_TRUE(lc.constrain_layout());
  ASSERT_EQ(lc.operand_shapes_with_layout_size(), 2);
  EXPECT_THAT(lc.operand_shapes_with_layout(0).dimensions(), ::testing::ElementsAre(4, 4));
  EXPECT_THAT(lc.operand_shapes_with_layout(0).layout().minor_to_major(), ::testing::ElementsAre(0, 1));
  EXPECT_EQ(lc.operand_shapes_with_layout(1).element_type(), xla::F32);
  EXPECT_THAT(inst("of").outfeed_shape().dimensions(), ::testing::ElementsAre(8));
  EXPECT_TRUE(inst("cs").has_cross_program_prefetch_index());
  EXPECT_EQ(inst("cs").cross_program_prefetch_index(), 0);
  // And back, as written.
  ExpectProtoRoundTrips(**module);
}

// The module's input_output_alias (HloInputOutputAliasProto) and
// buffer_donor (HloBufferDonorProto), both ways.
TEST(ProtoConvertTest, InputOutputAliasAndBufferDonor) {
  xla::HloModuleProto proto = ModuleProto(kParam, 1);
  ASSERT_TRUE(google::protobuf::TextFormat::MergeFromString(R"pb(
    input_output_alias { entries { output_shape_index: 1 parameter_number: 0 kind: MUST_ALIAS }
                         entries { output_shape_index: 0 parameter_number: 2 parameter_shape_index: 0
                                   parameter_shape_index: 3 kind: MAY_ALIAS } }
    buffer_donor { entries { parameter_number: 1 } entries { parameter_number: 3 parameter_shape_index: 2 } })pb",
                                                            &proto));
  auto module = HloModuleFromProto(proto);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_THAT(PrintHloModule(**module),
              HasSubstr("HloModule m, input_output_alias={ {1}: (0, {}, must-alias), {0}: (2, {0,3}, may-alias) }, "
                        "buffer_donor={ (1, {}), (3, {2}) }\n"));
  EXPECT_FALSE(proto.has_input_output_alias());  // consumed, not kept opaque

  // From text: XLA's fields, and the text back exactly (a writing other
  // than XLA's too: it is kept, and the fields are still written).
  for (const char* header : {"input_output_alias={ {0}: (0, {}, must-alias), {1}: (1, {}, may-alias) }",
                             "input_output_alias={{0}: (0, {}, must-alias), {1}: (1, {})}"}) {
    const std::string text = absl::StrCat("HloModule m, ", header, R"(, buffer_donor={ (0, {1}) }

ENTRY e {
  a = (f32[2], f32[2]) parameter(0)
  b = f32[2] parameter(1)
  ROOT t = (f32[2], f32[2]) tuple(b, b)
})");
    auto parsed = ParseHloModule(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    auto written = HloModuleToProto(**parsed);
    ASSERT_TRUE(written.ok());
    const xla::HloInputOutputAliasProto& alias = written->input_output_alias();
    ASSERT_EQ(alias.entries_size(), 2) << header;
    EXPECT_THAT(alias.entries(0).output_shape_index(), ::testing::ElementsAre(0));
    EXPECT_EQ(alias.entries(0).parameter_number(), 0);
    EXPECT_EQ(alias.entries(0).kind(), xla::MUST_ALIAS);
    EXPECT_EQ(alias.entries(1).parameter_number(), 1);
    EXPECT_EQ(alias.entries(1).kind(), xla::MAY_ALIAS);
    ASSERT_EQ(written->buffer_donor().entries_size(), 1);
    EXPECT_EQ(written->buffer_donor().entries(0).parameter_number(), 0);
    EXPECT_THAT(written->buffer_donor().entries(0).parameter_shape_index(), ::testing::ElementsAre(1));
    ExpectProtoRoundTrips(**parsed);
  }
}

// The header's entry_computation_layout is XLA's host_program_shape (the
// entry's own program_shape keeps the parameters' shapes).
TEST(ProtoConvertTest, EntryComputationLayoutIsTheHostProgramShape) {
  auto parsed = ParseHloModule(R"(HloModule m, entry_computation_layout={(f32[2,3]{0,1}, /*index=1*/(s32[], f32[4]{0}))->f32[2,3]{0,1}}

ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  b = (s32[], f32[4]{0}) parameter(1)
  ROOT c = f32[2,3]{1,0} copy(a)
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  auto written = HloModuleToProto(**parsed);
  ASSERT_TRUE(written.ok());
  const xla::ProgramShapeProto& host = written->host_program_shape();
  ASSERT_EQ(host.parameters_size(), 2);
  EXPECT_THAT(host.parameters(0).layout().minor_to_major(), ::testing::ElementsAre(0, 1));
  ASSERT_EQ(host.parameters(1).tuple_shapes_size(), 2);
  EXPECT_EQ(host.parameters(1).tuple_shapes(0).element_type(), xla::S32);
  EXPECT_THAT(host.result().layout().minor_to_major(), ::testing::ElementsAre(0, 1));
  EXPECT_THAT(host.parameter_names(), ::testing::ElementsAre("a", "b"));
  EXPECT_THAT(written->computations(0).program_shape().parameters(0).layout().minor_to_major(),
              ::testing::ElementsAre(1, 0));
  ExpectProtoRoundTrips(**parsed);
}

// async-update/-done: XLA's proto gives them the start's wrapped computation
// (called_computation_ids, which older XLA requires) and thread; their text
// names neither.
TEST(ProtoConvertTest, AsyncUpdateAndDoneCarryTheirStartsComputation) {
  xla::HloModuleProto proto;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    name: "a"
    computations { name: "wrapped" id: 1 root_id: 2 execution_thread: "t"
      instructions { name: "wp" opcode: "parameter" shape { element_type: F32 dimensions: 4 } id: 1 }
      instructions { name: "wc" opcode: "copy" shape { element_type: F32 dimensions: 4 } id: 2 operand_ids: 1 } }
    computations { name: "main" id: 2 root_id: 6
      instructions { name: "p" opcode: "parameter" shape { element_type: F32 dimensions: 4 } id: 3 }
      instructions { name: "s" opcode: "async-start" id: 4 operand_ids: 3 called_computation_ids: 1
                     async_execution_thread: "t"
                     shape { element_type: TUPLE tuple_shapes { element_type: TUPLE tuple_shapes { element_type: F32 dimensions: 4 } }
                             tuple_shapes { element_type: F32 dimensions: 4 } tuple_shapes { element_type: S32 } } }
      instructions { name: "u" opcode: "async-update" id: 5 operand_ids: 4 called_computation_ids: 1
                     async_execution_thread: "t"
                     shape { element_type: TUPLE tuple_shapes { element_type: TUPLE tuple_shapes { element_type: F32 dimensions: 4 } }
                             tuple_shapes { element_type: F32 dimensions: 4 } tuple_shapes { element_type: S32 } } }
      instructions { name: "d" opcode: "async-done" id: 6 operand_ids: 5 called_computation_ids: 1
                     async_execution_thread: "t" shape { element_type: F32 dimensions: 4 } } }
    entry_computation_id: 2)pb",
                                                           &proto));
  auto module = HloModuleFromProto(proto);
  ASSERT_TRUE(module.ok()) << module.status().message();
  const std::string printed = PrintHloModule(**module);
  // (hilo's canonical attribute order: called computations first.)
  EXPECT_THAT(printed, HasSubstr("async-start(f32[4] %p), calls=%wrapped, async_execution_thread=\"t\"\n"));
  EXPECT_THAT(printed, HasSubstr("async-update(((f32[4]), f32[4], s32[]) %s)\n"));
  EXPECT_THAT(printed, HasSubstr("async-done(((f32[4]), f32[4], s32[]) %u)\n"));

  // From text: the update and the done are written with the start's.
  auto parsed = ParseHloModule(printed);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  auto written = HloModuleToProto(**parsed);
  ASSERT_TRUE(written.ok());
  const xla::HloInstructionProto* s = FindInstruction(*written, "s");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->called_computation_ids_size(), 1);
  for (absl::string_view name : {"u", "d"}) {
    const xla::HloInstructionProto* i = FindInstruction(*written, name);
    ASSERT_NE(i, nullptr);
    EXPECT_THAT(i->called_computation_ids(), ::testing::ElementsAre(s->called_computation_ids(0))) << name;
    EXPECT_EQ(i->async_execution_thread(), "t") << name;
  }
  ExpectProtoRoundTrips(**parsed);
}

// Protobuf writes a map in its hash table's order, whose seed differs from
// one map to the next: a scheduled module's `schedule.sequences` (one entry
// per computation) and frontend attributes through the generated message
// must still come out the same bytes every time.
TEST(ProtoConvertTest, MapsAreWrittenTheSameEveryTime) {
  std::string text = "HloModule m, is_scheduled=true\n\n";
  std::string calls;
  for (int i = 0; i < 40; ++i) {
    absl::StrAppend(&text, "c", i, " {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n\n");
    absl::StrAppend(&calls, "  k", i, " = f32[] call(x), to_apply=c", i, "\n");
  }
  absl::StrAppend(&text, "ENTRY e {\n  x = f32[] parameter(0)\n", calls,
                  "  ROOT r = f32[] negate(x), frontend_attributes={a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\",f=\"6\",g=\"7\",h=\"8\"}\n}\n");
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  for (bool hand_written : {true, false}) {
    SetHandWrittenProtoCodec(hand_written);
    auto first = HloModuleToBytes(**module);
    ASSERT_TRUE(first.ok()) << first.status();
    for (int run = 0; run < 8; ++run) {
      auto again = HloModuleToBytes(**module);
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_EQ(*again, *first) << "hand-written codec: " << hand_written << ", run " << run;
    }
    auto read = HloModuleFromBytes(*first, DefaultProtoRecursionBudget());
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(PrintHloModule(**read), PrintHloModule(**module));
  }
  SetHandWrittenProtoCodec(true);
}

TEST(ProtoConvertTest, MalformedProtos) {
  auto error = [](const std::string& instructions, int64_t root) {
    xla::HloModuleProto proto = ModuleProto(instructions, root);
    auto module = HloModuleFromProto(proto);
    return module.ok() ? std::string("ok") : std::string(module.status().message());
  };
  const std::string param = kParam;
  EXPECT_THAT(error(param + R"pb(instructions { name: "q" opcode: "parameter" shape { element_type: F32 } id: 1 })pb", 1),
              HasSubstr("instruction id 1 is used twice"));
  EXPECT_THAT(error(param + R"pb(instructions { name: "q" opcode: "frobnicate" shape { element_type: F32 } id: 2 })pb", 2),
              HasSubstr("unknown opcode 'frobnicate'"));
  EXPECT_THAT(error(R"pb(instructions { name: "q" opcode: "parameter" id: 2
                         shape { element_type: F32 dimensions: 4294967296 dimensions: 4294967296 } })pb", 2),
              HasSubstr("the number of elements overflows"));
  EXPECT_THAT(error(param, 77), HasSubstr("root id 77 names no instruction"));
  EXPECT_THAT(error(param + R"pb(instructions { name: "p" opcode: "copy" shape { element_type: F32 } id: 2 operand_ids: 1 })pb", 2),
              HasSubstr("instruction p: instruction name is used twice"));
}

// The instruction names of `bytes` (a binary HloModuleProto)'s entry, in the
// order written, and whether it records the text's order.
std::vector<std::string> WrittenOrder(const std::string& bytes, bool* recorded) {
  xla::HloModuleProto proto;
  EXPECT_TRUE(proto.ParseFromString(bytes));
  std::vector<std::string> names;
  const xla::HloComputationProto& entry = proto.computations(proto.computations_size() - 1);
  for (const xla::HloInstructionProto& inst : entry.instructions()) names.push_back(inst.name());
  *recorded = entry.hilo_text().instruction_order_size() > 0;
  return names;
}

// `f` with environment variable `name` set to "0" (a speed switch off).
template <typename F>
auto WithSwitchOff(const char* name, F f) {
  setenv(name, "0", 1);
  auto result = f();
  unsetenv(name);
  return result;
}

TEST(ProtoConvertTest, InstructionsWrittenInTheTextsOrderWhenOperandsComeFirst) {
  // The text's order has operands first but is not the post order (a, d,
  // b, c, t): it is written as it is, with no recorded order.
  auto parsed = ParseHloModule(R"(HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  c = f32[2] negate(b)
  d = f32[2] negate(a)
  ROOT t = (f32[2], f32[2]) tuple(d, c)
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  absl::StatusOr<std::string> bytes = HloModuleToBytes(**parsed);
  ASSERT_TRUE(bytes.ok());
  bool recorded = true;
  EXPECT_THAT(WrittenOrder(*bytes, &recorded), ::testing::ElementsAre("a", "b", "c", "d", "t"));
  EXPECT_FALSE(recorded);
  absl::StatusOr<std::string> post = WithSwitchOff("HILO_PROTO_TEXT_ORDER", [&] { return HloModuleToBytes(**parsed); });
  ASSERT_TRUE(post.ok());
  EXPECT_THAT(WrittenOrder(*post, &recorded), ::testing::ElementsAre("a", "d", "b", "c", "t"));
  EXPECT_TRUE(recorded);
  for (const std::string* written : {&*bytes, &*post}) {
    auto back = LoadModule(*written, "m.pb");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(PrintHloModule(*back->module), PrintHloModule(**parsed));
  }
  ExpectProtoRoundTrips(**parsed);
}

TEST(ProtoConvertTest, ATextOrderWithAUseBeforeItsOperandIsWrittenInPostOrder) {
  auto parsed = ParseHloModule(R"(HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(m)
  m = f32[2] negate(a)
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  absl::StatusOr<std::string> bytes = HloModuleToBytes(**parsed);
  ASSERT_TRUE(bytes.ok());
  bool recorded = false;
  EXPECT_THAT(WrittenOrder(*bytes, &recorded), ::testing::ElementsAre("a", "m", "n"));
  EXPECT_TRUE(recorded);
  ExpectProtoRoundTrips(**parsed);
}

TEST(ProtoConvertTest, EntryLayoutReadPieceByPieceGivesTheSameHostProgramShape) {
  std::vector<absl::string_view> pieces;
  absl::string_view result;
  ASSERT_TRUE(EntryComputationLayoutPieces("{(f32[2,3]{0,1}, (s32[], f32[4]{0}) ,u8[])->f32[]}", &pieces, &result));
  EXPECT_THAT(pieces, ::testing::ElementsAre("f32[2,3]{0,1}", "(s32[], f32[4]{0})", "u8[]"));
  EXPECT_EQ(result, "f32[]");
  ASSERT_TRUE(EntryComputationLayoutPieces("{()->f32[]}", &pieces, &result));
  EXPECT_TRUE(pieces.empty());
  EXPECT_FALSE(EntryComputationLayoutPieces("(f32[])->f32[]", &pieces, &result));
  // Repeated shapes (parsed once), a tuple, a comment between parameters.
  auto parsed = ParseHloModule(R"(HloModule m, entry_computation_layout={(f32[2,3]{0,1}, f32[2,3]{0,1}, /*index=2*/(s32[], f32[4]{0}), f32[2,3]{0,1})->f32[2,3]{0,1}}

ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[2,3]{1,0} parameter(1)
  c = (s32[], f32[4]{0}) parameter(2)
  d = f32[2,3]{1,0} parameter(3)
  ROOT r = f32[2,3]{1,0} add(a, d)
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  absl::StatusOr<std::string> bytes = HloModuleToBytes(**parsed);
  absl::StatusOr<std::string> whole =
      WithSwitchOff("HILO_PROTO_LAYOUT_PIECES", [&] { return HloModuleToBytes(**parsed); });
  ASSERT_TRUE(bytes.ok() && whole.ok());
  EXPECT_EQ(*bytes, *whole);
  xla::HloModuleProto proto;
  ASSERT_TRUE(proto.ParseFromString(*bytes));
  ASSERT_EQ(proto.host_program_shape().parameters_size(), 4);
  EXPECT_THAT(proto.host_program_shape().parameters(3).layout().minor_to_major(), ::testing::ElementsAre(0, 1));
  EXPECT_EQ(proto.host_program_shape().parameters(2).tuple_shapes_size(), 2);
}

// Without a recorded order the reader finds an instruction built already
// at its position in the computation's list (HILO_PROTO_LIST_INDEX; =0: a
// vector of its own): ids that run consecutively and then stop, an operand
// after its user, a control predecessor and a root that is not last read
// the same either way, and a bad id is reported the same way.
TEST(ProtoConvertTest, InstructionsFoundInTheListAsInAVectorOfTheirOwn) {
  const std::string instructions = std::string(kParam) + R"pb(
    instructions { name: "n" opcode: "negate" shape { element_type: F32 dimensions: 8 dimensions: 4 layout { minor_to_major: 1 minor_to_major: 0 } } id: 2 operand_ids: 1 }
    instructions { name: "u" opcode: "add" shape { element_type: F32 dimensions: 8 dimensions: 4 layout { minor_to_major: 1 minor_to_major: 0 } } id: 7 operand_ids: 2 operand_ids: 9 control_predecessor_ids: 2 }
    instructions { name: "v" opcode: "negate" shape { element_type: F32 dimensions: 8 dimensions: 4 layout { minor_to_major: 1 minor_to_major: 0 } } id: 9 operand_ids: 1 }
    instructions { name: "w" opcode: "negate" shape { element_type: F32 dimensions: 8 dimensions: 4 layout { minor_to_major: 1 minor_to_major: 0 } } id: 10 operand_ids: 7 })pb";
  auto text = [&](int64_t root) {
    xla::HloModuleProto proto = ModuleProto(instructions, root);
    absl::StatusOr<std::unique_ptr<HloModule>> module = HloModuleFromProto(proto);
    if (!module.ok()) return "error: " + std::string(module.status().message());
    const std::string bytes((*module)->entry_computation()->root_instruction()->name());
    return bytes + "\n" + PrintHloModule(**module);
  };
  const std::string by_list = text(7);
  EXPECT_THAT(by_list, HasSubstr("ROOT %u = f32[8,4]{1,0} add(f32[8,4]{1,0} %n, f32[8,4]{1,0} %v), control-predecessors={%n}"));
  EXPECT_EQ(by_list, WithSwitchOff("HILO_PROTO_LIST_INDEX", [&] { return text(7); }));
  // Through the streamed reader (LoadModule of the bytes) too.
  std::string bytes;
  ASSERT_TRUE(ModuleProto(instructions, 7).SerializeToString(&bytes));
  auto loaded = [&] {
    auto back = LoadModule(bytes, "m.pb");
    return back.ok() ? PrintHloModule(*back->module) : std::string(back.status().message());
  };
  EXPECT_EQ(loaded(), WithSwitchOff("HILO_PROTO_LIST_INDEX", loaded));
  EXPECT_EQ(loaded(), by_list.substr(by_list.find('\n') + 1));
  EXPECT_THAT(text(11), HasSubstr("root id 11 names no instruction"));
  EXPECT_EQ(text(11), WithSwitchOff("HILO_PROTO_LIST_INDEX", [&] { return text(11); }));
}

// The reader hands its set of names to the module as its name index (as
// the text parser does): every instruction is found there as itself, so the
// verifier needs no name set of its own (HloModule::IndexedInstruction).
TEST(ProtoConvertTest, AProtoReadModulesNameIndexFindsItsInstructions) {
  xla::HloModuleProto proto = ModuleProto(std::string(kParam) + R"pb(
    instructions { name: "n" opcode: "negate" shape { element_type: F32 dimensions: 8 dimensions: 4 layout { minor_to_major: 1 minor_to_major: 0 } } id: 2 operand_ids: 1 })pb", 2);
  std::string bytes;
  ASSERT_TRUE(proto.SerializeToString(&bytes));
  auto loaded = LoadModule(bytes, "m.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  int found = 0;
  for (const HloComputation* c : loaded->module->computations()) {
    for (const HloInstruction* inst : c->instructions()) {
      EXPECT_EQ(loaded->module->IndexedInstruction(inst->name()), inst) << inst->name();
      ++found;
    }
  }
  EXPECT_EQ(found, 5);  // a, b, s of %add; p, n of the entry
  EXPECT_EQ(loaded->module->IndexedInstruction("nowhere"), nullptr);
}

}  // namespace
}  // namespace hilo
