// The hand-written instruction reader and writer (ReadWireInstruction,
// UseHandWrittenProtoCodec) against protobuf's generated messages: every
// encoding a protobuf parser accepts (fields in any order, repeated scalars
// packed or not, a field given twice, unknown fields of every wire type) and
// every one it refuses (truncated, over-long, invalid UTF-8, groups out of
// place) gives the same module or the same error both ways
// (fuzz::CheckHandWrittenCodec, which proto_reader_fuzzer checks too).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../../fuzz/proto_round_trip_check.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/proto/proto_text_attributes.h"
#include "hilo/proto/wire_split.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace {

// Instructions of every kind the hand-written reader and writer treat
// apart: hilo_text with only an attribute order (most) or with more (`ar2`:
// an attribute kept as text, frontend attributes out of order), an iota,
// replica groups, frontend attributes, metadata, a tuple shape.
constexpr char kText[] = R"(HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b), metadata={op_type="add" op_name="sum/add"}
}

ENTRY main {
  p = f32[8,4]{1,0} parameter(0)
  t = (f32[8,4]{1,0}, s32[]) parameter(1)
  g = s32[] get-tuple-element(t), index=1
  c = f32[] constant(0)
  r = f32[8]{0} reduce(p, c), dimensions={1}, to_apply=add, metadata={op_type="sum" op_name="r" source_file="x.py" source_line=7}
  ar = f32[8]{0} all-reduce(r), channel_id=3, replica_groups={{0,1}}, to_apply=add, frontend_attributes={k="v"}
  ar2 = f32[8]{0} all-reduce(ar), replica_groups={{0,1}}, to_apply=add, frontend_attributes={z="1",a="2"}, statistics={visualizing_index=1,stat-0=0.5}
  i = s32[8]{0} iota(), iota_dimension=0
  ROOT o = (f32[8]{0}, s32[]) tuple(ar2, g), control-predecessors={r}
}
)";

// The generated writer's bytes for kText.
std::string ModuleBytes() {
  auto module = ParseHloModule(kText);
  EXPECT_TRUE(module.ok()) << module.status();
  SetHandWrittenProtoCodec(false);
  absl::StatusOr<std::string> bytes = HloModuleToBytes(**module);
  SetHandWrittenProtoCodec(true);
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

// One field of a message: its number, wire type, tag-and-all bytes and payload.
struct Field {
  uint32_t number, wire_type;
  std::string bytes;
  std::string payload;  // length-delimited fields
};

bool Varint(absl::string_view& in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; !in.empty() && shift < 70; shift += 7) {
    const uint8_t b = static_cast<uint8_t>(in[0]);
    in.remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) return true;
  }
  return false;
}

std::string VarintBytes(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

// The fields of a well-formed message without groups (what the writers write).
std::vector<Field> Fields(absl::string_view in) {
  std::vector<Field> fields;
  while (!in.empty()) {
    const char* start = in.data();
    uint64_t tag = 0, v = 0;
    EXPECT_TRUE(Varint(in, &tag));
    Field f{static_cast<uint32_t>(tag >> 3), static_cast<uint32_t>(tag & 7), "", ""};
    switch (f.wire_type) {
      case 0: EXPECT_TRUE(Varint(in, &v)); break;
      case 1: in.remove_prefix(8); break;
      case 5: in.remove_prefix(4); break;
      case 2:
        EXPECT_TRUE(Varint(in, &v));
        f.payload = std::string(in.substr(0, v));
        in.remove_prefix(v);
        break;
      default: ADD_FAILURE() << "wire type " << f.wire_type; return fields;
    }
    f.bytes = std::string(start, in.data() - start);
    fields.push_back(std::move(f));
  }
  return fields;
}

std::string Delimited(uint32_t number, absl::string_view payload) {
  return VarintBytes((uint64_t{number} << 3) | 2) + VarintBytes(payload.size()) + std::string(payload);
}

// The module with every instruction's bytes replaced by `change(bytes)`.
template <typename Change>
std::string ChangeInstructions(const std::string& module, Change change) {
  std::string out;
  for (const Field& f : Fields(module)) {
    if (f.number != 3 || f.wire_type != 2) {
      out += f.bytes;
      continue;
    }
    std::string computation;
    for (const Field& g : Fields(f.payload)) {
      computation += g.number == 2 && g.wire_type == 2 ? Delimited(2, change(g.payload)) : g.bytes;
    }
    out += Delimited(3, computation);
  }
  return out;
}

// The same result both ways, and whether the module loads is `loads`
// (unless nullopt).
void ExpectSame(const std::string& bytes, std::optional<bool> loads) {
  EXPECT_EQ(fuzz::CheckHandWrittenCodec(bytes), "");
  SetHandWrittenProtoCodec(true);
  if (loads.has_value()) {
    EXPECT_EQ(LoadModule(bytes, "m.pb").ok(), *loads);
  }
}

TEST(ProtoWireTest, WritersWriteTheSameMessage) { ExpectSame(ModuleBytes(), true); }

TEST(ProtoWireTest, FieldsInAnyOrder) {
  ExpectSame(ChangeInstructions(ModuleBytes(),
                                [](const std::string& inst) {
                                  std::vector<Field> fields = Fields(inst);
                                  std::string out;
                                  for (auto it = fields.rbegin(); it != fields.rend(); ++it) out += it->bytes;
                                  return out;
                                }),
             true);
}

TEST(ProtoWireTest, RepeatedScalarsPackedOrNot) {
  ExpectSame(ChangeInstructions(ModuleBytes(),
                                [](const std::string& inst) {
                                  std::string out;
                                  for (const Field& f : Fields(inst)) {
                                    const bool ids = f.number >= 36 && f.number <= 38;
                                    if (!(ids || f.number == 14) || f.wire_type != 2) {
                                      out += f.bytes;
                                      continue;
                                    }
                                    absl::string_view values = f.payload;
                                    uint64_t v = 0;
                                    while (Varint(values, &v)) out += VarintBytes(uint64_t{f.number} << 3) + VarintBytes(v);
                                  }
                                  return out;
                                }),
             true);
}

// Strings: the last wins; sub-messages: merged (a shape given twice has its
// dimensions and minor_to_major twice); repeated fields: concatenated.
TEST(ProtoWireTest, FieldsGivenTwice) {
  for (uint32_t number : {1u, 2u, 3u, 7u, 35u, 36u, 14u, 68u, 100001u}) {
    SCOPED_TRACE(number);
    ExpectSame(ChangeInstructions(ModuleBytes(),
                                  [&](const std::string& inst) {
                                    std::string out;
                                    for (const Field& f : Fields(inst)) {
                                      out += f.bytes;
                                      if (f.number == number) out += f.bytes;
                                    }
                                    return out;
                                  }),
               true);
  }
  // A name given twice: the last wins.
  ExpectSame(ChangeInstructions(ModuleBytes(),
                                [](const std::string& inst) {
                                  return Delimited(1, "first") + inst;
                                }),
             true);
}

TEST(ProtoWireTest, UnknownFieldsOfEveryWireTypeAreKept) {
  const std::string unknown = VarintBytes(1000 << 3) + VarintBytes(300) +       // varint
                              VarintBytes((1001 << 3) | 5) + "abcd" +           // fixed32
                              VarintBytes((1002 << 3) | 1) + "abcdefgh" +       // fixed64
                              Delimited(1003, "xyz") +                          // length-delimited
                              VarintBytes((1004 << 3) | 3) + VarintBytes(5 << 3) + VarintBytes(1) +
                              VarintBytes((1004 << 3) | 4) +                    // a group
                              VarintBytes(1 << 3) + VarintBytes(7) +            // name as a varint
                              VarintBytes((35 << 3) | 2) + VarintBytes(0);      // id as bytes
  ExpectSame(ChangeInstructions(ModuleBytes(), [&](const std::string& inst) { return unknown + inst; }), true);
  ExpectSame(ChangeInstructions(ModuleBytes(), [&](const std::string& inst) { return inst + unknown; }), true);
}

TEST(ProtoWireTest, UnusualButValidEncodings) {
  const std::string bytes = ModuleBytes();
  // A non-ASCII (valid UTF-8) name; the id as a 10-byte varint; a varint
  // whose 10th byte has bits past 64 (protobuf drops them).
  int next = 0;
  ExpectSame(ChangeInstructions(bytes,
                                [&](const std::string& inst) {
                                  return inst + Delimited(1, "n\xc3\xa9" + std::to_string(++next));
                                }),
             std::nullopt);  // (the root's name in the computation's signature no longer matches)
  ExpectSame(ChangeInstructions(bytes,
                                [&](const std::string& inst) {
                                  // The id again (the last wins), as a 10-byte varint.
                                  std::string out = inst;
                                  for (const Field& f : Fields(inst)) {
                                    if (f.number != 35) continue;
                                    absl::string_view value = absl::string_view(f.bytes).substr(2);
                                    uint64_t id = 0;
                                    EXPECT_TRUE(Varint(value, &id));
                                    std::string ten = VarintBytes(id);
                                    ten.back() |= '\x80';
                                    ten += std::string(9 - ten.size(), '\x80') + '\x00';
                                    out += VarintBytes(35 << 3) + ten;
                                  }
                                  return out;
                                }),
             true);
  ExpectSame(ChangeInstructions(bytes,
                                [&](const std::string& inst) {
                                  return inst + VarintBytes(13 << 3) + std::string(9, '\xff') + '\x7f';
                                }),
             std::nullopt);
}

TEST(ProtoWireTest, MalformedInstructions) {
  const std::string bytes = ModuleBytes();
  const std::vector<std::string> bad = {
      Delimited(1, "\xff\xfe"),                     // invalid UTF-8 name
      VarintBytes(36 << 3) + std::string(11, '\xff') + '\x01',  // an 11-byte varint
      VarintBytes(36 << 3),                         // a varint cut off
      VarintBytes((36 << 3) | 2) + VarintBytes(3) + "\x01\x82",  // a packed run cut off
      VarintBytes((3 << 3) | 2) + VarintBytes(100),  // a length past the end
      VarintBytes((1004 << 3) | 4),                 // an end-group alone
      VarintBytes((1004 << 3) | 3),                 // an unterminated group
      VarintBytes((1004 << 3) | 6) + "x",           // wire type 6
      std::string("\x00", 1),                       // field number 0
      Delimited(3, Delimited(5, std::string("\x08\xff", 2))),  // a shape whose layout is cut off
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSame(ChangeInstructions(bytes, [&](const std::string& inst) { return inst + bad[i]; }), false);
  }
}

// Every prefix of the module, and random byte changes.
TEST(ProtoWireTest, TruncatedAndMutatedModules) {
  const std::string bytes = ModuleBytes();
  for (size_t n = 0; n < bytes.size(); n += 3) {
    ASSERT_EQ(fuzz::CheckHandWrittenCodec(bytes.substr(0, n)), "") << n;
  }
  std::mt19937 random(20);
  for (int i = 0; i < 1500; ++i) {
    std::string changed = bytes;
    for (int k = 0; k < 1 + i % 3; ++k) changed[random() % changed.size()] = static_cast<char>(random());
    ASSERT_EQ(fuzz::CheckHandWrittenCodec(changed), "") << i;
  }
}

// Varints of every length, at each length's boundaries (the reader reads
// one, two and three bytes apart from longer ones): the hand-written
// reader gives the generated messages' channel ids.
TEST(ProtoWireTest, VarintsAtEveryLengthBoundary) {
  const std::string bytes = ModuleBytes();
  for (int length = 1; length <= 9; ++length) {
    for (uint64_t v : {(uint64_t{1} << (7 * length)) - 1, uint64_t{1} << (7 * length)}) {
      SCOPED_TRACE(v);
      ExpectSame(ChangeInstructions(bytes, [&](const std::string& inst) { return inst + VarintBytes(26 << 3) + VarintBytes(v); }),
                 true);
    }
  }
}

// Metadata strings with a byte CEscape changes at every position of the
// first two 8-byte words (the writer and RenderMetadata look for one a word
// at a time): written as the generated messages write them, read back to
// the same text.
TEST(ProtoWireTest, MetadataEscapesAtEveryPosition) {
  for (absl::string_view escaped : {"\\\"", "\\'", "\\\\", "\\n", "\\177", "\\001", "\\303\\251"}) {
    for (size_t at = 0; at <= 17; ++at) {
      const std::string name = std::string(at, 'a') + std::string(escaped) + std::string(17 - at, 'b');
      SCOPED_TRACE(name);
      const std::string text = absl::StrCat(
          "HloModule m\n\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0), metadata={op_type=\"t\" op_name=\"", name,
          "\" source_file=\"", name, "\"}\n}\n");
      auto module = ParseHloModule(text);
      ASSERT_TRUE(module.ok()) << module.status();
      SetHandWrittenProtoCodec(false);
      absl::StatusOr<std::string> bytes = HloModuleToBytes(**module);
      SetHandWrittenProtoCodec(true);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ(fuzz::CheckHandWrittenCodec(*bytes), "");
      absl::StatusOr<LoadedModule> loaded = LoadModule(*bytes, "m.pb");
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      EXPECT_EQ(PrintHloModule(*loaded->module), PrintHloModule(**module));
    }
  }
}

// An instruction whose message the hand-written reader leaves empty skips
// the text-attribute mappers, except where a mapper writes a text for an
// unset field: an XLA-written batch-norm without epsilon (0) still prints
// `epsilon=0`, both ways; an add has none.
TEST(ProtoWireTest, EmptyMessageSkipsOnlyMappersWithoutDefaultText) {
  EXPECT_TRUE(DecodesFromEmptyMessage(HloOpcode::kBatchNormInference));
  EXPECT_TRUE(DecodesFromEmptyMessage(HloOpcode::kBatchNormTraining));
  EXPECT_FALSE(DecodesFromEmptyMessage(HloOpcode::kAdd));
  EXPECT_FALSE(DecodesFromEmptyMessage(HloOpcode::kAllReduce));
  xla::HloModuleProto m;
  m.set_name("m");
  m.set_entry_computation_name("e");
  m.set_entry_computation_id(1);
  xla::HloComputationProto* c = m.add_computations();
  c->set_name("e");
  c->set_id(1);
  auto add = [&](const char* name, const char* opcode, std::vector<int64_t> dims, int64_t id,
                 std::vector<int64_t> operands) {
    xla::HloInstructionProto* i = c->add_instructions();
    i->set_name(name);
    i->set_opcode(opcode);
    i->set_id(id);
    i->mutable_shape()->set_element_type(xla::F32);
    for (int64_t d : dims) i->mutable_shape()->add_dimensions(d);
    for (int64_t k = static_cast<int64_t>(dims.size()) - 1; k >= 0; --k) {
      i->mutable_shape()->mutable_layout()->add_minor_to_major(k);
    }
    for (int64_t o : operands) i->add_operand_ids(o);
    return i;
  };
  add("p0", "parameter", {3, 2}, 1, {});
  add("p1", "parameter", {3}, 2, {})->set_parameter_number(1);
  add("bn", "batch-norm-inference", {3, 2}, 3, {1, 2, 2, 2, 2});
  add("sum", "add", {3, 2}, 4, {3, 3});
  c->set_root_id(4);
  const std::string bytes = m.SerializeAsString();
  EXPECT_EQ(fuzz::CheckHandWrittenCodec(bytes), "");
  SetHandWrittenProtoCodec(true);
  absl::StatusOr<LoadedModule> loaded = LoadModule(bytes, "m.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const std::string printed = PrintHloModule(*loaded->module);
  EXPECT_NE(printed.find("%p1), epsilon=0\n"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("%bn)\n"), std::string::npos) << printed;
}

// OpMetadata bytes of every kind: what the hand-written reader renders
// straight from the wire (PlainMetadataText: op_type, op_name, source_file,
// source_line, in order, once each, plain) and what it leaves to protobuf
// (fields out of order or given twice, an empty string, a source_line of 0,
// negative or past int32, an escaped or non-ASCII byte, another field, a
// truncated field) read the same both ways.
TEST(ProtoWireTest, MetadataBytesOfEveryKind) {
  const std::string bytes = ModuleBytes();
  auto str = [](uint32_t n, absl::string_view v) { return Delimited(n, v); };
  auto num = [](uint32_t n, uint64_t v) { return VarintBytes(uint64_t{n} << 3) + VarintBytes(v); };
  const std::string variants[] = {
      "",
      str(1, "t"),
      str(1, "t") + str(2, "a/b") + str(3, "f.py") + num(4, 7),
      str(2, "n") + num(4, 1),
      num(4, INT32_MAX),
      str(2, "n") + str(1, "t"),
      str(1, "t") + str(1, "u"),
      num(4, 3) + str(3, "f"),
      str(1, ""),
      num(4, 0),
      num(4, uint64_t{INT32_MAX} + 1),
      num(4, UINT64_MAX),
      num(4, uint64_t{1} << 35),
      std::string("\x20\x87\x80\x80\x00", 5),  // source_line 7, not minimal
      std::string("\x0a\x81\x00", 3) + "t",     // a length of 1, not minimal
      str(1, "a\"b"),
      str(1, "a\\b"),
      str(2, "\xc3\xa9"),
      str(2, "\xff"),
      str(1, "t") + str(5, "d"),
      str(1, "t") + num(6, 1),
      str(1, "t") + std::string("\x12\x05", 2) + "ab",  // cut off
  };
  for (const std::string& metadata : variants) {
    SCOPED_TRACE(absl::CEscape(metadata));
    ExpectSame(ChangeInstructions(bytes,
                                  [&](const std::string& inst) {
                                    std::string out;
                                    for (const Field& f : Fields(inst)) {
                                      out += f.number == 7 ? Delimited(7, metadata) : f.bytes;
                                    }
                                    return out;
                                  }),
               std::nullopt);
  }
}

// Many distinct shapes, and attribute orders that share the count, the
// first and the last name: the reader finds each in a slot of a small table
// by a cheap key (HILO_PROTO_SHAPE_SLOTS, HILO_PROTO_ORDER_SLOTS) and must
// tell apart those that share a slot; the writer keeps an order's name
// indices per order (HILO_PROTO_ORDER_INDICES).
TEST(ProtoWireTest, ShapesAndOrdersSharingSlots) {
  std::string text = "HloModule m\n\nENTRY e {\n";
  for (int i = 1; i <= 300; ++i) {
    const char* middle = i % 3 == 0 ? "metadata={op_type=\"x\"}" : i % 3 == 1 ? "backend_config=\"c\"" : "frontend_attributes={k=\"v\"}";
    const char* last = i % 2 == 0 ? "sharding={replicated}" : "statistics={visualizing_index=1}";
    absl::StrAppend(&text, "  p", i, " = f32[", i, ",", 301 - i, "]{", i % 2, ",", 1 - i % 2, "} parameter(", i - 1,
                    "), origin={{\"a\"}}, ", middle, ", ", last, "\n");
  }
  text += "  ROOT t = (f32[1,300]{1,0}, f32[2,299]{0,1}, f32[300,1]{0,1}) tuple(p1, p2, p300)\n}\n";
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintHloModule(**module);
  absl::StatusOr<std::string> bytes = HloModuleToBytes(**module);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(fuzz::CheckHandWrittenCodec(*bytes), "");
  SetHandWrittenProtoCodec(true);
  absl::StatusOr<LoadedModule> loaded = LoadModule(*bytes, "m.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(PrintHloModule(*loaded->module), printed);
}

// SplitField on fields of every wire type (a group among them or not: the
// quick walk leaves groups to CodedInputStream), with long tags and
// varints: the selected field's payloads and the other fields' bytes, in
// order; and every prefix that cuts a field is refused.
TEST(ProtoWireTest, SplitFieldOfEveryWireType) {
  auto tag = [](uint64_t number, uint64_t wire_type) { return VarintBytes((number << 3) | wire_type); };
  const std::string long_payload(200, 'x');
  for (bool with_group : {false, true}) {
    SCOPED_TRACE(with_group);
    // (field bytes, payload of field 3 or nullopt)
    std::vector<std::pair<std::string, std::optional<std::string>>> fields = {
        {tag(1, 0) + VarintBytes(300), std::nullopt},
        {tag(2, 1) + std::string(8, '\x07'), std::nullopt},
        {Delimited(3, "abc"), "abc"},
        {tag(4, 5) + std::string(4, '\x01'), std::nullopt},
        {Delimited(3, ""), ""},
        {tag(1, 0) + VarintBytes(UINT64_MAX), std::nullopt},
        {Delimited(3, long_payload), long_payload},
        {Delimited(uint32_t{1} << 28, "far"), std::nullopt},
        {tag(3, 0) + VarintBytes(5), std::nullopt},  // field 3, another wire type: "other"
    };
    if (with_group) fields.insert(fields.begin() + 2, {tag(5, 3) + tag(1, 0) + VarintBytes(1) + tag(5, 4), std::nullopt});
    std::string message, rest;
    std::vector<std::string> payloads;
    std::vector<size_t> ends;
    for (const auto& [bytes, payload] : fields) {
      message += bytes;
      ends.push_back(message.size());
      if (payload.has_value()) {
        payloads.push_back(*payload);
      } else {
        rest += bytes;
      }
    }
    std::vector<absl::string_view> got;
    std::string got_rest = "kept:";
    ASSERT_TRUE(SplitField(message, 3, &got, &got_rest));
    EXPECT_EQ(std::vector<std::string>(got.begin(), got.end()), payloads);
    EXPECT_EQ(got_rest, "kept:" + rest);
    for (size_t cut = 1; cut < message.size(); ++cut) {
      if (std::find(ends.begin(), ends.end(), cut) != ends.end()) continue;
      SCOPED_TRACE(cut);
      got.clear();
      got_rest.clear();
      EXPECT_FALSE(SplitField(absl::string_view(message).substr(0, cut), 3, &got, &got_rest));
    }
  }
}

}  // namespace
}  // namespace hilo
