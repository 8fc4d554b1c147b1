// The streaming binary reader (HloModuleFromBytes, LoadModule on binary
// protos) against protobuf's whole-message parse: the same files load, to the
// same module, whatever order the fields come in, whichever envelope holds
// the module, however deep the nesting; files protobuf refuses are refused.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/proto/module_file.h"
#include "hilo/proto/wire_split.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace {

using ::testing::HasSubstr;

xla::HloModuleProto FromText(const std::string& text) {
  xla::HloModuleProto proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto)) << text;
  return proto;
}

// Two computations, 64-bit XLA ids (the computation's id in the high bits)
// with local operand ids, a call, unknown and unmapped fields at every level.
constexpr char kModule[] = R"pb(
  name: "m"
  computations {
    name: "add"
    id: 1
    root_id: 4294967299
    instructions { name: "a" opcode: "parameter" shape { element_type: F32 } id: 4294967297 }
    instructions {
      name: "b" opcode: "parameter" shape { element_type: F32 } id: 4294967298 parameter_number: 1
    }
    instructions {
      name: "s" opcode: "add" shape { element_type: F32 } id: 4294967299 operand_ids: 1 operand_ids: 2
    }
  }
  computations {
    name: "main"
    id: 2
    root_id: 8589934595
    instructions {
      name: "p" opcode: "parameter" shape { element_type: F32 dimensions: 8 layout { minor_to_major: 0 } }
      id: 8589934593
      operand_shapes_with_layout { element_type: F32 }
    }
    instructions {
      name: "r" opcode: "reduce" shape { element_type: F32 } id: 8589934594
      operand_ids: 1 operand_ids: 1 dimensions: 0 called_computation_ids: 1
      metadata { op_type: "sum" op_name: "r" }
    }
    instructions {
      name: "c" opcode: "copy" shape { element_type: F32 } id: 8589934595 operand_ids: 2
      control_predecessor_ids: 1
    }
  }
  entry_computation_id: 2
  entry_computation_name: "main"
  device_assignment { replica_count: 2 computation_count: 1 }
)pb";

std::string Serialized(const google::protobuf::Message& m) { return m.SerializeAsString(); }

// Printed module of the whole-message reader, or its error.
std::string ReadWhole(xla::HloModuleProto proto) {
  absl::StatusOr<std::unique_ptr<HloModule>> m = HloModuleFromProto(proto);
  return m.ok() ? PrintHloModule(**m) : "error: " + std::string(m.status().message());
}

std::string ReadStreamed(absl::string_view bytes, absl::string_view name = "m.pb") {
  absl::StatusOr<LoadedModule> m = LoadModule(bytes, name);
  return m.ok() ? PrintHloModule(*m->module) : "error: " + std::string(m.status().message());
}

TEST(ProtoStreamTest, SameModuleAsTheWholeMessage) {
  const xla::HloModuleProto proto = FromText(kModule);
  const std::string whole = ReadWhole(proto);
  ASSERT_THAT(whole, HasSubstr("ENTRY"));
  EXPECT_EQ(ReadStreamed(Serialized(proto)), whole);
  // The fields hilo does not model come back from the streamed reading too.
  absl::StatusOr<LoadedModule> loaded = LoadModule(Serialized(proto), "m.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  absl::StatusOr<std::string> again = SerializeModule(*loaded->module, ModuleFormat::kProto);
  ASSERT_TRUE(again.ok());
  xla::HloModuleProto back;
  ASSERT_TRUE(back.ParseFromString(*again));
  EXPECT_EQ(back.device_assignment().replica_count(), 2);
  EXPECT_EQ(back.computations(1).instructions(0).operand_shapes_with_layout_size(), 1);
  EXPECT_EQ(ReadStreamed(*again), whole);
}

// The wire format allows fields in any order and a message field split in
// several occurrences (merged): the streamed reader sees what protobuf sees.
TEST(ProtoStreamTest, FieldOrderAndSplitMessages) {
  const xla::HloModuleProto proto = FromText(kModule);
  const std::string whole = ReadWhole(proto);
  // Module: the computations after every other field, then before.
  xla::HloModuleProto no_comps = proto;
  no_comps.clear_computations();
  std::string comps;
  for (const xla::HloComputationProto& c : proto.computations()) {
    xla::HloModuleProto one;
    *one.add_computations() = c;
    comps += Serialized(one);
  }
  EXPECT_EQ(ReadStreamed(Serialized(no_comps) + comps), whole);
  EXPECT_EQ(ReadStreamed(comps + Serialized(no_comps)), whole);
  // A computation whose fields are interleaved with its instructions.
  xla::HloModuleProto interleaved = no_comps;
  std::string bytes = Serialized(no_comps);
  for (const xla::HloComputationProto& c : proto.computations()) {
    std::string body;
    for (int i = 0; i < c.instructions_size(); ++i) {
      xla::HloComputationProto piece;
      *piece.add_instructions() = c.instructions(i);
      if (i == 1) piece.set_name(c.name());
      body += Serialized(piece);
    }
    xla::HloComputationProto rest = c;
    rest.clear_instructions();
    rest.clear_name();
    body = Serialized(rest) + body;
    AppendLengthDelimitedField(xla::HloModuleProto::kComputationsFieldNumber, body, &bytes);
  }
  EXPECT_EQ(ReadStreamed(bytes), whole);
  // An HloProto whose module comes in two occurrences of field 1.
  xla::HloModuleProto first_half = proto;
  first_half.clear_computations();
  std::string hlo;
  AppendLengthDelimitedField(1, Serialized(first_half), &hlo);
  AppendLengthDelimitedField(1, comps, &hlo);
  EXPECT_EQ(ReadStreamed(hlo, "m.hlo.pb"), whole);
  xla::HloProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(hlo));
  EXPECT_EQ(ReadWhole(parsed.hlo_module()), whole);
}

TEST(ProtoStreamTest, EnvelopesKeepTheirFields) {
  const xla::HloModuleProto proto = FromText(kModule);
  xla::HloSnapshot snap;
  *snap.mutable_hlo()->mutable_hlo_module() = proto;
  snap.set_execution_platform("cpu");
  snap.add_arguments()->mutable_shape()->set_element_type(xla::F32);
  snap.mutable_arguments(0)->add_f32s(1.5);
  absl::StatusOr<LoadedModule> loaded = LoadModule(Serialized(snap), "m.snapshot.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->message, ProtoMessage::kHloSnapshot);
  ASSERT_EQ(loaded->arguments.size(), 1u);
  EXPECT_EQ(PrintHloModule(*loaded->module), ReadWhole(proto));
  absl::StatusOr<std::string> again =
      SerializeModule(*loaded->module, ModuleFormat::kProto, loaded->message, loaded->envelope);
  ASSERT_TRUE(again.ok());
  xla::HloSnapshot back;
  ASSERT_TRUE(back.ParseFromString(*again));
  EXPECT_EQ(back.execution_platform(), "cpu");
  EXPECT_EQ(back.arguments(0).f32s(0), 1.5f);
}

// A parameter whose shape nests `depth` tuples.
xla::HloModuleProto Nested(int depth) {
  xla::HloModuleProto proto;
  proto.set_name("deep");
  xla::HloComputationProto* c = proto.add_computations();
  c->set_name("main");
  c->set_id(1);
  c->set_root_id(1);
  xla::HloInstructionProto* p = c->add_instructions();
  p->set_name("p");
  p->set_opcode("parameter");
  p->set_id(1);
  xla::ShapeProto* s = p->mutable_shape();
  for (int i = 0; i < depth; ++i) {
    s->set_element_type(xla::TUPLE);
    s = s->add_tuple_shapes();
  }
  s->set_element_type(xla::F32);
  proto.set_entry_computation_id(1);
  return proto;
}

// Exactly the nesting protobuf's parser takes, in each envelope; no
// recursion deeper than that.
TEST(ProtoStreamTest, NestingLimitIsProtobufs) {
  for (int envelope = 0; envelope < 3; ++envelope) {
    auto wrap = [&](const xla::HloModuleProto& m) {
      if (envelope == 0) return Serialized(m);
      xla::HloProto hp;
      *hp.mutable_hlo_module() = m;
      if (envelope == 1) return Serialized(hp);
      xla::HloSnapshot snap;
      *snap.mutable_hlo() = hp;
      return Serialized(snap);
    };
    int deepest = -1;
    for (int depth = 80; depth < 110; ++depth) {
      const std::string bytes = wrap(Nested(depth));
      bool parses = false;
      if (envelope == 0) parses = xla::HloModuleProto().ParseFromString(bytes);
      if (envelope == 1) parses = xla::HloProto().ParseFromString(bytes);
      if (envelope == 2) parses = xla::HloSnapshot().ParseFromString(bytes);
      const std::string read = ReadStreamed(bytes, "deep.pb");
      EXPECT_EQ(read.rfind("error", 0) != 0, parses) << "envelope " << envelope << ", depth " << depth << ": " << read;
      if (parses) deepest = depth;
    }
    EXPECT_EQ(deepest, 97 - envelope);
  }
}

TEST(ProtoStreamTest, BadBytesAreNoModule) {
  const std::string bytes = Serialized(FromText(kModule));
  // Truncated anywhere: refused (and never a crash).
  for (size_t n = 0; n < bytes.size(); n += 7) {
    EXPECT_THAT(ReadStreamed(bytes.substr(0, n)), HasSubstr("error")) << n;
  }
  // An instruction whose bytes do not parse (a string that is not UTF-8),
  // in a module that is otherwise fine: the error names it.
  xla::HloModuleProto bad = FromText(kModule);
  bad.mutable_computations(1)->mutable_instructions(2)->set_name("c");
  std::string b = Serialized(bad);
  const size_t at = b.find(std::string("\x0a\x01" "c", 3));
  ASSERT_NE(at, std::string::npos);
  b[at + 2] = '\xff';
  EXPECT_THAT(ReadStreamed(b), HasSubstr("not a binary xla.HloModuleProto"));
  EXPECT_THAT(ReadStreamed(b), HasSubstr("computation main: instruction 3 of 3 does not parse"));
  // A module that would fail to convert (an unknown opcode) but whose later
  // bytes do not parse: as with a whole message, it is no module at all.
  xla::HloModuleProto both = bad;
  both.mutable_computations(1)->mutable_instructions(0)->set_opcode("frobnicate");
  std::string c = Serialized(both);
  c[c.find(std::string("\x0a\x01" "c", 3)) + 2] = '\xff';
  EXPECT_THAT(ReadStreamed(c), HasSubstr("not a binary xla.HloModuleProto"));
  // And without the bad bytes, the conversion's error.
  both.mutable_computations(1)->mutable_instructions(2)->set_name("c");
  EXPECT_THAT(ReadStreamed(Serialized(both)), HasSubstr("unknown opcode 'frobnicate'"));
}

TEST(ProtoStreamTest, ConversionErrorsAsTheWholeMessage) {
  auto with = [](const std::string& edit) {
    xla::HloModuleProto proto = FromText(kModule);
    xla::HloComputationProto* main = proto.mutable_computations(1);
    if (edit == "dup") main->mutable_instructions(1)->set_id(8589934593);
    if (edit == "operand") main->mutable_instructions(2)->set_operand_ids(0, 77);
    if (edit == "cycle") main->mutable_instructions(0)->add_control_predecessor_ids(3);
    if (edit == "callee") main->mutable_instructions(1)->set_called_computation_ids(0, 9);
    if (edit == "root") main->set_root_id(99);
    return proto;
  };
  for (const char* edit : {"dup", "operand", "cycle", "callee", "root"}) {
    const xla::HloModuleProto proto = with(edit);
    const std::string whole = ReadWhole(proto);
    ASSERT_EQ(whole.rfind("error: ", 0), 0u) << edit;
    EXPECT_EQ(ReadStreamed(Serialized(proto)), "error: m.pb: error: " + whole.substr(7)) << edit;
  }
}

// Three computations of 17,000 instructions each (the entry calls the other
// two; one of them has a forward reference, so its order is recorded and
// every id is read first), written as a binary proto: more than two huge
// blocks of the arena at 88 bytes an instruction (ArenaEndsInSmallPages).
std::string LargeModuleText() {
  std::string text = "HloModule big\n\n";
  for (const char* name : {"c0", "c1", "e"}) {
    const bool entry = std::strcmp(name, "e") == 0;
    absl::StrAppend(&text, entry ? "ENTRY " : "", name, " {\n  p = f32[] parameter(0)\n");
    std::string last = "p";
    if (entry) {
      absl::StrAppend(&text, "  a = f32[] call(p), to_apply=c0\n  b = f32[] call(a), to_apply=c1\n");
      last = "b";
    }
    if (std::strcmp(name, "c1") == 0) absl::StrAppend(&text, "  f = f32[] negate(later)\n  later = f32[] negate(p)\n");
    for (int i = 0; i < 17000; ++i) {
      absl::StrAppend(&text, "  n", i, " = f32[] negate(", last, ")\n");
      last = absl::StrCat("n", i);
    }
    absl::StrAppend(&text, "  ROOT r = f32[] negate(", last, ")\n}\n\n");
  }
  return text;
}

// hilo-opt gives the input's pages back behind the decoder (done_before,
// every 128 KB of instructions built, as the text parser does) and after
// the last instruction (done_from): here those pages are made unreadable
// as they are reported, so a read of a byte the decoder said it was done
// with would crash the test; the module must still come out whole.
TEST(ProtoStreamTest, DecodesWithTheInputDroppedBehindIt) {
  absl::StatusOr<std::unique_ptr<HloModule>> parsed = ParseHloModule(LargeModuleText(), "big.hlo");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const std::string printed = PrintHloModule(**parsed);
  absl::StatusOr<std::string> bytes = SerializeModule(**parsed, ModuleFormat::kProto);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const size_t step = size_t{128} << 10;
  ASSERT_GT(bytes->size(), 6 * step);  // several steps in each computation
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped_size = (bytes->size() + page - 1) / page * page;
  void* mapped = mmap(nullptr, mapped_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  char* data = static_cast<char*>(mapped);
  std::memcpy(data, bytes->data(), bytes->size());
  std::vector<size_t> before;
  std::vector<size_t> from;
  size_t protected_before = 0;
  const std::function<void(size_t)> done_before = [&](size_t offset) {
    before.push_back(offset);
    const size_t end = offset / page * page;
    if (end > protected_before) {
      ASSERT_EQ(mprotect(data + protected_before, end - protected_before, PROT_NONE), 0);
      protected_before = end;
    }
  };
  const std::function<void(size_t)> done_from = [&](size_t offset) {
    from.push_back(offset);
    const size_t begin = (offset + page - 1) / page * page;
    if (begin < mapped_size) {
      ASSERT_EQ(mprotect(data + begin, mapped_size - begin, PROT_NONE), 0);
    }
  };
  absl::StatusOr<LoadedModule> loaded =
      LoadModule(absl::string_view(data, bytes->size()), "big.pb", done_before, done_from);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(PrintHloModule(*loaded->module), printed);
  ASSERT_EQ(from.size(), 1u);
  EXPECT_GT(from[0], bytes->size() - step);  // only the fields after the instructions
  // In increasing offsets, through every computation, never more than 128
  // KB (and an instruction or a computation's few other fields) behind the
  // decoder: within a computation every 128 KB, and once more as the next
  // computation starts.
  ASSERT_GE(before.size(), bytes->size() / step);
  for (size_t i = 1; i < before.size(); ++i) {
    EXPECT_GT(before[i], before[i - 1]) << i;
    EXPECT_LT(before[i] - before[i - 1], step + 512) << i;
  }
  EXPECT_LT(before[0], step + 512);
  EXPECT_LT(from[0] - before.back(), step + 512);
  munmap(mapped, mapped_size);
}

// The decoder tells the instruction arena how much it will hold, as the
// text parser does: the read starts in huge blocks (where the kernel gives
// them) and ends in a block of small pages, resident only as far as it is
// used, instead of a whole 2 MB huge page at the end of the read.
TEST(ProtoStreamTest, ArenaEndsInSmallPages) {
  absl::StatusOr<std::unique_ptr<HloModule>> parsed = ParseHloModule(LargeModuleText(), "big.hlo");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<std::string> bytes = SerializeModule(**parsed, ModuleFormat::kProto);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<LoadedModule> loaded = LoadModule(*bytes, "big.pb");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const InstructionArena& arena = loaded->module->instruction_arena();
  ASSERT_GT(arena.used_bytes(), 2 * InstructionArena::kHugeBlock);
  ASSERT_GE(arena.blocks().size(), 2u);
  if (InstructionArena::kBlocksFromHeap) return;  // (no huge pages under a sanitizer)
  EXPECT_EQ(arena.blocks().front().huge_page_advised, InstructionArena::HugePagesEnabled());
  EXPECT_EQ(arena.blocks().front().size, InstructionArena::kHugeBlock);  // huge from the first
  EXPECT_FALSE(arena.blocks().back().huge_page_advised);
}

TEST(ProtoStreamTest, WireSplit) {
  std::vector<absl::string_view> payloads;
  std::string rest;
  // Field 1 varint (kept), field 2 bytes "ab" (selected), field 2 as a
  // varint (kept: another wire type), a group (kept).
  const std::string bytes = std::string("\x08\x05\x12\x02" "ab\x10\x07\x1b\x08\x01\x1c", 12);
  ASSERT_TRUE(SplitField(bytes, 2, &payloads, &rest));
  ASSERT_EQ(payloads.size(), 1u);
  EXPECT_EQ(payloads[0], "ab");
  EXPECT_EQ(rest, std::string("\x08\x05\x10\x07\x1b\x08\x01\x1c", 8));
  EXPECT_EQ(ScanVarintField(bytes, 1), 5);
  EXPECT_EQ(ScanVarintField(bytes, 9), 0);
  // Truncated, a zero tag, an end-group tag, an unterminated group, wire type 7.
  for (const std::string& bad : {std::string("\x12\x05" "ab", 4), std::string(1, '\0'), std::string("\x0c"),
                                 std::string("\x1b\x08\x01"), std::string("\x0f")}) {
    payloads.clear();
    EXPECT_FALSE(SplitField(bad, 2, &payloads, &rest)) << bad;
    EXPECT_FALSE(ScanVarintField(bad, 1).has_value()) << bad;
  }
}

}  // namespace
}  // namespace hilo
