// WireWriter (a length-delimited field written before its length is known)
// against protobuf's own serializer, in memory and streamed to a file in
// pieces of every size, with lengths guessed right, too short and too long;
// and WriteBinaryModule streamed to a file against SerializeModule.
#include "hilo/proto/wire_writer.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hilo/proto/hlo.pb.h"
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/proto/module_file.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace {

// The whole content of `file`.
std::string Contents(std::FILE* file) {
  std::string out;
  std::rewind(file);
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) out.append(buffer, n);
  return out;
}

// A module whose computations' payloads need 1, 2 and 3 bytes of length.
xla::HloModuleProto Module() {
  xla::HloModuleProto m;
  m.set_name("m");
  for (int count : {1, 3, 400, 6000}) {
    xla::HloComputationProto* c = m.add_computations();
    c->set_name(absl::StrCat("c", count));
    for (int i = 0; i < count; ++i) {
      xla::HloInstructionProto* inst = c->add_instructions();
      inst->set_name(absl::StrCat("i", i));
      inst->set_opcode("add");
      inst->set_id(i + 1);
    }
  }
  m.set_entry_computation_name("c6000");
  return m;
}

// Writes Module() through `out` as HloProto field 1 (the module) holding
// field 3 (each computation), the lengths guessed by `guess` (of the exact
// payload size), then the HloProto's bytes after it.
absl::Status WriteFramed(const xla::HloModuleProto& m, uint64_t (*guess)(uint64_t), WireWriter* out) {
  out->Begin(1, guess(m.ByteSizeLong()));
  // Protobuf's order: name (1), entry_computation_name (2), computations (3).
  out->buffer().append(absl::StrCat("\x0a\x01", m.name(), "\x12\x05", m.entry_computation_name()));
  for (const xla::HloComputationProto& c : m.computations()) {
    out->Begin(3, guess(c.ByteSizeLong()));
    out->buffer().append(absl::StrCat("\x0a", std::string(1, static_cast<char>(c.name().size())), c.name()));
    // In pieces, so that a small flush size writes some of it out.
    for (const xla::HloInstructionProto& inst : c.instructions()) {
      out->Begin(2, guess(inst.ByteSizeLong()));
      AppendDeterministicBytes(inst, &out->buffer());
      if (absl::Status s = out->End(); !s.ok()) return s;
      if (absl::Status s = out->MaybeFlush(); !s.ok()) return s;
    }
    if (absl::Status s = out->End(); !s.ok()) return s;
  }
  if (absl::Status s = out->End(); !s.ok()) return s;
  return out->Finish();
}

std::string Expected(const xla::HloModuleProto& m) {
  // Protobuf's order (name, computations, entry name) is the order written.
  xla::HloProto p;
  *p.mutable_hlo_module() = m;
  return DeterministicBytes(p);
}

uint64_t Exact(uint64_t n) { return n; }
uint64_t TooShort(uint64_t) { return 0; }
uint64_t TooLong(uint64_t n) { return n * 200 + 1; }

TEST(WireWriterTest, InMemoryAnyGuessGivesProtobufsBytes) {
  const xla::HloModuleProto m = Module();
  int moves = 0;
  for (auto guess : {Exact, TooShort, TooLong}) {
    WireWriter out;
    ASSERT_TRUE(WriteFramed(m, guess, &out).ok());
    moves += out.moves();
    EXPECT_EQ(out.file_moves(), 0);
    EXPECT_EQ(out.TakeBytes(), Expected(m));
  }
  EXPECT_GT(moves, 0);  // the wrong guesses did move payloads
}

TEST(WireWriterTest, StreamedToAFileAnyGuessGivesProtobufsBytes) {
  const xla::HloModuleProto m = Module();
  for (size_t flush : {size_t{1}, size_t{7}, size_t{1000}, WireWriter::kDefaultFlushBytes}) {
    for (auto guess : {Exact, TooShort, TooLong}) {
      std::FILE* file = std::tmpfile();
      ASSERT_NE(file, nullptr);
      WireWriter out(fileno(file), "test", flush);
      ASSERT_TRUE(WriteFramed(m, guess, &out).ok());
      EXPECT_EQ(Contents(file), Expected(m)) << "flush " << flush;
      if (guess == Exact) {
        EXPECT_EQ(out.moves(), 0);
      }
      // Payloads already in the file were moved there, both ways.
      if (guess != Exact && flush < 1000) {
        EXPECT_GT(out.file_moves(), 0) << "flush " << flush;
      }
      std::fclose(file);
    }
  }
}

TEST(WireWriterTest, WriteErrorsAreReported) {
  WireWriter out(12345, "nowhere", 1);  // not an open descriptor
  out.buffer().append("x");
  absl::Status status = out.Finish();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("cannot write 'nowhere'"), std::string::npos) << status;
}

// A module of several computations, large enough for its entry to be
// written out in pieces.
std::string ModuleText() {
  std::string text = R"(HloModule streamed, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b), metadata={op_type="add" op_name="sum/add"}
}

ENTRY main {
  p = f32[8]{0} parameter(0)
  v0 = f32[8]{0} all-reduce(p), channel_id=1, replica_groups={{0,1}}, to_apply=add
)";
  for (int i = 1; i < 3000; ++i) {
    absl::StrAppend(&text, "  v", i, " = f32[8]{0} add(v", i - 1, ", p), metadata={op_name=\"layer", i,
                    "/add\"}\n");
  }
  absl::StrAppend(&text, "  ROOT r = f32[8]{0} negate(v2999)\n}\n");
  return text;
}

TEST(WireWriterTest, StreamedModuleIsSerializeModules) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(ModuleText());
  ASSERT_TRUE(module.ok()) << module.status();
  for (ProtoMessage message : {ProtoMessage::kHloModuleProto, ProtoMessage::kHloProto, ProtoMessage::kHloSnapshot}) {
    absl::StatusOr<std::string> whole = SerializeModule(**module, ModuleFormat::kProto, message);
    ASSERT_TRUE(whole.ok()) << whole.status();
    for (size_t flush : {size_t{64}, size_t{100000}}) {
      std::FILE* file = std::tmpfile();
      ASSERT_NE(file, nullptr);
      WireWriter out(fileno(file), "test", flush);
      ASSERT_TRUE(WriteBinaryModule(**module, message, "", &out).ok());
      EXPECT_EQ(Contents(file), *whole) << "message " << static_cast<int>(message) << ", flush " << flush;
      std::fclose(file);
    }
  }
}

// Pieces larger than the buffer go straight to the file after what it
// holds, smaller ones into it: the bytes are the same either way, and the
// buffer never grows past its first reserve (HILO_PROTO_BOUNDED_BUFFER=0:
// it grows to take them, the way this test can see failing).
TEST(WireWriterTest, AppendKeepsTheBufferWithinItsReserve) {
  const std::string big(10000, 'x');
  for (bool bounded : {true, false}) {
    if (!bounded) setenv("HILO_PROTO_BOUNDED_BUFFER", "0", 1);
    std::FILE* file = std::tmpfile();
    ASSERT_NE(file, nullptr);
    WireWriter out(fileno(file), "test", 8);
    const size_t reserve = out.buffer().capacity();
    ASSERT_LT(reserve, big.size());
    std::string expected;
    out.Begin(3, 1);  // a guess too short: the payload moves in the file
    ASSERT_TRUE(out.Append("abc").ok());
    ASSERT_TRUE(out.Append(big).ok());
    ASSERT_TRUE(out.Append("def").ok());
    ASSERT_TRUE(AppendLengthDelimitedField(5, big, &out).ok());
    ASSERT_TRUE(out.End().ok());
    std::string payload = "abc" + big + "def";
    AppendLengthDelimitedField(5, big, &payload);
    AppendLengthDelimitedField(3, payload, &expected);
    ASSERT_TRUE(out.Finish().ok());
    EXPECT_EQ(Contents(file), expected) << "bounded " << bounded;
    if (bounded) {
      EXPECT_EQ(out.buffer().capacity(), reserve);
    } else {
      EXPECT_GT(out.buffer().capacity(), big.size());
    }
    std::fclose(file);
    unsetenv("HILO_PROTO_BOUNDED_BUFFER");
  }
}

// A module whose program shapes and module fields (an entry of 600
// parameters and its layout) are each larger than the streamed buffer:
// written out around it, the same bytes as in memory, the buffer not grown.
TEST(WireWriterTest, LargeModuleFieldsDoNotGrowTheBuffer) {
  std::string params, layout, uses;
  for (int i = 0; i < 600; ++i) {
    absl::StrAppend(&params, "  parameter_number_", i, " = f32[8,16]{1,0} parameter(", i, ")\n");
    absl::StrAppend(&layout, i == 0 ? "" : ", ", "f32[8,16]{1,0}");
  }
  const std::string text = absl::StrCat("HloModule wide, entry_computation_layout={(", layout,
                                        ")->f32[8,16]{1,0}}\n\nENTRY main {\n", params,
                                        "  ROOT r = f32[8,16]{1,0} negate(parameter_number_0)\n}\n");
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::string> whole = SerializeModule(**module, ModuleFormat::kProto, ProtoMessage::kHloModuleProto);
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  WireWriter out(fileno(file), "test", 64);
  const size_t reserve = out.buffer().capacity();
  ASSERT_TRUE(WriteBinaryModule(**module, ProtoMessage::kHloModuleProto, "", &out).ok());
  EXPECT_EQ(Contents(file), *whole);
  EXPECT_EQ(out.buffer().capacity(), reserve);
  std::fclose(file);
}

// The program shapes the streamed writer makes from the shapes' bytes (each
// computation's, and the module's host_program_shape from the entry or from
// the entry computation layout, which may give other layouts) without
// building them first: the same messages as protobuf's, built field by
// field (HloModuleToProto), for a module with a layout and one without, and
// large enough (600 parameters) to be written around a small buffer.
TEST(WireWriterTest, ProgramShapesAreProtobufs) {
  std::string params, layout;
  for (int i = 0; i < 600; ++i) {
    absl::StrAppend(&params, "  parameter_number_", i, " = f32[8,16]{1,0} parameter(", i, ")\n");
    absl::StrAppend(&layout, i == 0 ? "" : ", ", i % 2 == 0 ? "f32[8,16]{0,1}" : "f32[8,16]{1,0}");
  }
  const std::string body = absl::StrCat("\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n",
                                        "  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n", params,
                                        "  z = f32[] constant(0)\n",
                                        "  ROOT r = f32[8] reduce(parameter_number_0, z), dimensions={1}, to_apply=add\n}\n");
  for (const std::string& header :
       {absl::StrCat("HloModule wide, entry_computation_layout={(", layout, ")->f32[8]{0}}"), std::string("HloModule wide")}) {
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(header + body);
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<xla::HloModuleProto> expected = HloModuleToProto(**module);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_EQ(expected->host_program_shape().parameters_size(), 600);
    // (From the layout, parameter 0's layout is {0,1}; from the entry, {1,0}.)
    const bool from_layout = header.size() > 20;
    ASSERT_EQ(expected->host_program_shape().parameters(0).layout().minor_to_major(0), from_layout ? 0 : 1);
    std::FILE* file = std::tmpfile();
    ASSERT_NE(file, nullptr);
    WireWriter out(fileno(file), "test", 64);
    ASSERT_TRUE(WriteBinaryModule(**module, ProtoMessage::kHloModuleProto, "", &out).ok());
    xla::HloModuleProto written;
    ASSERT_TRUE(written.ParseFromString(Contents(file)));
    std::fclose(file);
    EXPECT_EQ(written.host_program_shape().SerializeAsString(), expected->host_program_shape().SerializeAsString())
        << header.substr(0, 40);
    ASSERT_EQ(written.computations_size(), expected->computations_size());
    for (int i = 0; i < written.computations_size(); ++i) {
      EXPECT_EQ(written.computations(i).program_shape().SerializeAsString(),
                expected->computations(i).program_shape().SerializeAsString())
          << header.substr(0, 40) << " computation " << i;
    }
  }
}

}  // namespace
}  // namespace hilo
