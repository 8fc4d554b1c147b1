// Tests of the HLO text printer: XLA's layout, byte-identical round trips of
// XLA-printed text, idempotence, attribute order for parsed and
// pass-created attributes, derived signatures, and the streaming form
// (pieces, sink errors).
#include <stdlib.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "hilo/text/text_flags.h"

namespace hilo {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<HloModule> Parse(absl::string_view text) {
  auto m = ParseHloModule(text, "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

HloInstruction* Find(const HloModule& m, absl::string_view name) {
  for (HloComputation* c : m.computations()) {
    for (HloInstruction* i : c->instructions()) {
      if (i->name() == name) return i;
    }
  }
  ADD_FAILURE() << "no instruction " << name;
  return nullptr;
}

// print(parse(x)) == x, and printing is idempotent.
void ExpectRoundTrip(absl::string_view text) {
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  std::string printed = PrintHloModule(*m);
  EXPECT_EQ(printed, text);
  auto again = Parse(printed);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(PrintHloModule(*again), printed);
}

// As XLA prints a module: `%` names, operand shapes, layouts, signatures,
// index comments in long tuples and operand lists, metadata, stack frames.
constexpr absl::string_view kXlaDump = R"hlo(HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8]{0}, f32[8]{0})->f32[8]{0}}, replica_count=2, num_partitions=4

FileNames
1 "/tmp/a.py"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}


%region_0.4 (Arg_0.5: f32[], Arg_1.6: f32[]) -> f32[] {
  %Arg_0.5 = f32[] parameter(0), metadata={op_name="jit(f)"}
  %Arg_1.6 = f32[] parameter(1), metadata={op_name="jit(f)"}
  ROOT %add.7 = f32[] add(f32[] %Arg_0.5, f32[] %Arg_1.6), metadata={op_name="jit(f)/add" stack_frame_id=1}
} // region_0.4

ENTRY %main.10 (Arg_0.1: f32[8], Arg_1.2: f32[8]) -> f32[8] {
  %Arg_0.1 = f32[8]{0} parameter(0), sharding={replicated}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}]>"}
  %Arg_1.2 = f32[8]{0} parameter(1)
  %all-reduce.3 = f32[8]{0} all-reduce(f32[8]{0} %Arg_0.1), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%region_0.4
  %tuple.8 = (f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, /*index=5*/f32[8]{0}) tuple(f32[8]{0} %all-reduce.3, f32[8]{0} %Arg_1.2, f32[8]{0} %Arg_1.2, f32[8]{0} %Arg_1.2, f32[8]{0} %Arg_1.2, /*index=5*/f32[8]{0} %Arg_1.2)
  %constant.1 = f32[] constant(-inf)
  %custom-call.2 = f32[8]{0} custom-call(f32[8]{0} %Arg_1.2), custom_call_target="Sharding", custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI, backend_config={"k":"v"}
  ROOT %get-tuple-element.9 = f32[8]{0} get-tuple-element((f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, /*index=5*/f32[8]{0}) %tuple.8), index=0, metadata={op_name="jit(f)/gte" source_file="/tmp/a.py" source_line=3}
}
)hlo";

TEST(PrinterTest, XlaDumpRoundTripsByteIdentical) { ExpectRoundTrip(kXlaDump); }

// The short style XLA tests use: bare names, no operand shapes, no signature.
constexpr absl::string_view kShortStyle = R"hlo(HloModule m, replica_count=4

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  ar = f32[4] all-reduce(p0), replica_groups={{0,1},{2,3}}, to_apply=add
  t = (f32[4], f32[4], f32[4], f32[4], f32[4], /*index=5*/f32[4]) tuple(ar, p1, p1, p1, p1, p1)
  ROOT g = f32[4] get-tuple-element(t), index=5, control-predecessors={ar}
}
)hlo";

// Explicit replica groups are printed once per shared list and then
// copied; more lists than the printer remembers, lists changed by a pass and
// empty lists still print exactly.
TEST(PrinterTest, SharedReplicaGroupsPrintExactly) {
  std::string text = "HloModule m\n\nENTRY %e (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n";
  std::string previous = "%p";
  for (int i = 0; i < 12; ++i) {
    // Six different lists, each used twice, interleaved.
    const int k = i % 6;
    std::string groups = "{";
    for (int g = 0; g <= k; ++g) absl::StrAppend(&groups, g > 0 ? "," : "", "{", g, ",", g + 8, "}");
    groups += "}";
    absl::StrAppend(&text, "  %ar", i, " = f32[8]{0} all-reduce(f32[8]{0} ", previous,
                    "), channel_id=", i + 1, ", replica_groups=", groups, ", to_apply=%add\n");
    previous = absl::StrCat("%ar", i);
  }
  absl::StrAppend(&text, "  ROOT %r = f32[8]{0} all-reduce(f32[8]{0} ", previous,
                  "), channel_id=13, replica_groups={}, to_apply=%add\n}\n");
  text = absl::StrCat("HloModule m\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                      "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n\n",
                      text.substr(std::string("HloModule m\n\n").size()));
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintHloModule(*m), text);
  // A pass gives one collective new groups: only it prints them.
  Find(*m, "ar7")->set_replica_groups(ReplicaGroups::Explicit({{0, 1, 2, 3}}));
  std::string printed = PrintHloModule(*m);
  EXPECT_THAT(printed, HasSubstr("%ar7 = f32[8]{0} all-reduce(f32[8]{0} %ar6), channel_id=8, "
                                 "replica_groups={{0,1,2,3}}"));
  EXPECT_THAT(printed, HasSubstr("%ar1 = f32[8]{0} all-reduce(f32[8]{0} %ar0), channel_id=2, "
                                 "replica_groups={{0,8},{1,9}},"));
  EXPECT_THAT(printed, HasSubstr("channel_id=13, replica_groups={}, to_apply=%add"));
}

// Integers print through three paths (below 100, below 10,000, the rest):
// every boundary prints exactly.
TEST(PrinterTest, IntegersAtEveryPrintingBoundary) {
  const std::string text =
      "HloModule m\n\nENTRY %e (p: s8[0,9,10,99,100,999,1000,9999,10000,123456789]) -> "
      "s8[0,9,10,99,100,999,1000,9999,10000,123456789] {\n"
      "  ROOT %p = s8[0,9,10,99,100,999,1000,9999,10000,123456789]{9,8,7,6,5,4,3,2,1,0} "
      "parameter(0), channel_id=9223372036854775807\n}\n";
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintHloModule(*m), text);
}

TEST(PrinterTest, ShortStyleRoundTripsByteIdentical) { ExpectRoundTrip(kShortStyle); }

TEST(PrinterTest, AsyncSugarExecutionThreadAndRawValuesRoundTrip) {
  ExpectRoundTrip(R"hlo(HloModule m

%wrapped (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %y = f32[4]{0} custom-call(f32[4]{0} %x), custom_call_target="foo"
}, execution_thread="host"

ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %s = ((f32[4]{0}), f32[4]{0}, s32[]) async-start(f32[4]{0} %p), async_execution_thread="host", calls=%wrapped
  %d = f32[4]{0} async-done(((f32[4]{0}), f32[4]{0}, s32[]) %s)
  %cs = ((f32[4]{0}), f32[4]{0}, s32[]) custom-call-start(f32[4]{0} %d), custom_call_target="bar"
  %cd = f32[4]{0} custom-call-done(((f32[4]{0}), f32[4]{0}, s32[]) %cs)
  %ag = f32[16]{0} all-gather(f32[4]{0} %cd), replica_groups=mesh[x=2,y=2] {x,y}, dimensions={0}
  ROOT %c = f32[4]{0} convolution(f32[4]{0} %cd, f32[4]{0} %cd), window={size=1}, dim_labels=b0f_0io->b0f, operand_precision={high,default}
}
)hlo");
}

TEST(PrinterTest, HeaderlessAndLegacyStyleAreIdempotent) {
  // Written without ENTRY, ROOT, or canonical spacing: printed in XLA's
  // layout, then stable.
  auto m = Parse("HloModule old:\nc {\n    a = f32[] parameter(0)\n    b = f32[] negate( a )\n}\n");
  ASSERT_NE(m, nullptr);
  std::string printed = PrintHloModule(*m);
  EXPECT_EQ(printed, "HloModule old:\n\nENTRY c {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n}\n");
  EXPECT_EQ(PrintHloModule(*Parse(printed)), printed);

  auto headerless = Parse("ENTRY c {\n  ROOT a = f32[] parameter(0)\n}\n");
  ASSERT_NE(headerless, nullptr);
  EXPECT_EQ(PrintHloModule(*headerless), "ENTRY c {\n  ROOT a = f32[] parameter(0)\n}\n");
}

TEST(PrinterTest, ConveniencesPrintExplicitly) {
  auto m = Parse(R"hlo(HloModule m
ENTRY e {
  p = (f32[2], s32[]) parameter(0)
  ROOT t = tuple(p#0, negate(p#0))
}
)hlo");
  ASSERT_NE(m, nullptr);
  std::string printed = PrintHloModule(*m);
  EXPECT_THAT(printed, HasSubstr("ROOT t = (f32[2], f32[2]) tuple(get-tuple-element, negate)"));
  EXPECT_THAT(printed, HasSubstr("get-tuple-element = f32[2] get-tuple-element(p), index=0"));
  EXPECT_EQ(PrintHloModule(*Parse(printed)), printed);
}

TEST(PrinterTest, AttributesSetByAPassFollowWrittenOnesInXlaOrder) {
  auto m = Parse(R"hlo(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT ag = f32[16] all-gather(p), dimensions={0}, metadata={op_name="x"}
}
)hlo");
  ASSERT_NE(m, nullptr);
  HloInstruction* ag = Find(*m, "ag");
  ag->set_channel_id(7);
  ag->set_replica_groups(ReplicaGroups::Explicit({{0, 1, 2, 3}}));
  ag->mutable_frontend_attributes()->Set("stream_id", "1");
  ag->set_backend_config(std::string("{\"a\": 1}"));
  EXPECT_EQ(PrintHloInstruction(*ag),
            "ag = f32[16] all-gather(p), dimensions={0}, metadata={op_name=\"x\"}, channel_id=7, "
            "replica_groups={{0,1,2,3}}, frontend_attributes={stream_id=\"1\"}, "
            "backend_config=\"{\\\"a\\\": 1}\"");
  // An attribute removed by a pass is no longer printed.
  ag->set_metadata("");
  ag->mutable_attribute_order()->Erase(1);
  EXPECT_THAT(PrintHloInstruction(*ag), ::testing::Not(HasSubstr("metadata")));
}

// A quoted attribute is escaped exactly when it has a byte absl::CEscape
// changes, found sixteen bytes at a time (printer.cc's NeedsCEscape, the
// last block overlapping): every escaped byte kind at every position of
// texts of 0 to 40 bytes, and texts without one, print as CEscape writes
// them. (HILO_PRINT_QUOTED_SIMD=0, the byte loop, is read once a process:
// the identity check covers it.)
TEST(PrinterTest, QuotedTextIsEscapedWhereverTheByteIs) {
  auto m = Parse(R"hlo(HloModule m
ENTRY e {
  ROOT c = f32[] custom-call(), custom_call_target="t"
}
)hlo");
  ASSERT_NE(m, nullptr);
  HloInstruction* c = Find(*m, "c");
  const std::string specials = std::string("\"\\'\n\t\x01\x1f\x7f\x80\xff", 10);
  int checked = 0;
  for (size_t size = 0; size <= 40; ++size) {
    std::vector<std::string> texts = {std::string(size, 'a')};
    for (size_t at = 0; at < size; ++at) {
      for (char special : specials) {
        std::string text(size, ' ');
        for (size_t i = 0; i < size; ++i) text[i] = static_cast<char>('!' + (i * 7) % 90);
        // '!' + ... stays within the printable range that needs no escape,
        // except the quote, backslash and apostrophe: keep those out.
        for (char& ch : text) {
          if (ch == '"' || ch == '\\' || ch == '\'') ch = 'x';
        }
        text[at] = special;
        texts.push_back(std::move(text));
      }
    }
    for (const std::string& text : texts) {
      c->set_backend_config(text);
      EXPECT_THAT(PrintHloInstruction(*c),
                  HasSubstr(absl::StrCat("backend_config=\"", absl::CEscape(text), "\"")))
          << "size " << size;
      ++checked;
    }
  }
  EXPECT_GT(checked, 4000);
}

TEST(PrinterTest, InstructionsAddedByAPassUseTheModuleStyle) {
  auto m = Parse(R"hlo(HloModule m
ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(f32[4]{0} %p)
}
)hlo");
  ASSERT_NE(m, nullptr);
  HloComputation* e = m->entry_computation();
  HloInstruction* p = Find(*m, "p");
  HloInstruction* cc = e->AddInstruction(HloInstruction::CreateCustomCall(
      Shape::MakeArray(PrimitiveType::F32, {4}), {p}, "AwsNeuronCollectiveMatmul", "cfg"));
  EXPECT_EQ(PrintHloInstruction(*cc),
            "%custom-call = f32[4] custom-call(f32[4]{0} %p), "
            "custom_call_target=\"AwsNeuronCollectiveMatmul\", backend_config=\"cfg\"");
  // A module built without the parser prints in XLA's default style.
  HloModule fresh("fresh");
  auto comp = std::make_unique<HloComputation>("main");
  HloInstruction* x = comp->AddInstruction(
      HloInstruction::CreateParameter(0, Shape::MakeArray(PrimitiveType::S32, {}), "x"));
  comp->set_root_instruction(x);
  fresh.AddComputation(std::move(comp), /*is_entry=*/true);
  EXPECT_EQ(PrintHloModule(fresh), "HloModule fresh\n\nENTRY %main {\n  ROOT %x = s32[] parameter(0)\n}\n");
}

TEST(PrinterTest, SignatureIsRegeneratedWhenTheComputationChanges) {
  auto m = Parse(R"hlo(HloModule m
ENTRY %e (a: f32[4]{0}) -> s32[4]{0} {
  %p = f32[4]{0} parameter(0)
  %n = f32[4]{0} negate(f32[4]{0} %p)
  ROOT %c = s32[4]{0} convert(f32[4]{0} %n)
}
)hlo");
  ASSERT_NE(m, nullptr);
  // Unchanged: the written signature is kept, even though XLA would print it differently.
  EXPECT_THAT(PrintHloModule(*m), HasSubstr("ENTRY %e (a: f32[4]{0}) -> s32[4]{0} {"));
  // After a pass changes the root, the signature is derived from the computation.
  m->entry_computation()->set_root_instruction(Find(*m, "n"));
  EXPECT_THAT(PrintHloModule(*m), HasSubstr("ENTRY %e (p: f32[4]) -> f32[4] {"));
  EXPECT_EQ(ComputationSignature(*m->entry_computation()), "(p: f32[4]) -> f32[4]");
}

TEST(PrinterTest, ComputationSignatureIsComparesWithoutBuilding) {
  auto m = Parse(R"hlo(HloModule m
ENTRY %e {
  %p = f32[4]{0} parameter(0)
  %q = (s32[], f32[4]{0}) parameter(1)
  ROOT %n = f32[4]{0} negate(f32[4]{0} %p)
}
)hlo");
  ASSERT_NE(m, nullptr);
  const HloComputation& e = *m->entry_computation();
  const std::string canonical = "(p: f32[4], q: (s32[], f32[4])) -> f32[4]";
  EXPECT_EQ(ComputationSignature(e), canonical);
  EXPECT_TRUE(ComputationSignatureIs(e, canonical));
  EXPECT_FALSE(ComputationSignatureIs(e, ""));
  EXPECT_FALSE(ComputationSignatureIs(e, canonical.substr(0, canonical.size() - 1)));  // a prefix
  EXPECT_FALSE(ComputationSignatureIs(e, canonical + " "));                           // longer
  EXPECT_FALSE(ComputationSignatureIs(e, "(p: f32[4], q: (s32[], f32[5])) -> f32[4]"));
}

TEST(PrinterTest, ComputationSignatureIsHandlesSignaturesLongerThanItsBuffer) {
  // 200 parameters: about 3 KB of signature, flushed in several pieces.
  std::string text = "HloModule m\nENTRY %e {\n";
  for (int i = 0; i < 200; ++i) {
    absl::StrAppend(&text, "  %parameter_", i, " = f32[16,32]{1,0} parameter(", i, ")\n");
  }
  absl::StrAppend(&text, "  ROOT %t = f32[16,32]{1,0} negate(f32[16,32]{1,0} %parameter_0)\n}\n");
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  const HloComputation& e = *m->entry_computation();
  std::string canonical = ComputationSignature(e);
  ASSERT_GT(canonical.size(), 3000u);
  EXPECT_TRUE(ComputationSignatureIs(e, canonical));
  std::string changed = canonical;
  changed[2500] = changed[2500] == '1' ? '2' : '1';  // in a later piece
  EXPECT_FALSE(ComputationSignatureIs(e, changed));
}

TEST(PrinterTest, CanonicalSignatureFollowsTheComputation) {
  // A signature written as XLA prints it is derived at print time, so it
  // follows a pass's change too.
  auto m = Parse(R"hlo(HloModule m
ENTRY %e (p: f32[4]) -> s32[4] {
  %p = f32[4]{0} parameter(0)
  %n = f32[4]{0} negate(f32[4]{0} %p)
  ROOT %c = s32[4]{0} convert(f32[4]{0} %n)
}
)hlo");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(PrintHloModule(*m), HasSubstr("ENTRY %e (p: f32[4]) -> s32[4] {"));
  m->entry_computation()->set_root_instruction(Find(*m, "n"));
  EXPECT_THAT(PrintHloModule(*m), HasSubstr("ENTRY %e (p: f32[4]) -> f32[4] {"));
}

TEST(PrinterTest, StringsAreEscaped) {
  auto m = Parse(R"hlo(HloModule m
ENTRY e {
  ROOT c = f32[] custom-call(), custom_call_target="a\"b\\c", backend_config="line1\nline2", frontend_attributes={k="v\"w"}
}
)hlo");
  ASSERT_NE(m, nullptr);
  HloInstruction* c = Find(*m, "c");
  EXPECT_EQ(c->custom_call_target(), "a\"b\\c");
  EXPECT_EQ(*c->backend_config(), "line1\nline2");
  std::string printed = PrintHloInstruction(*c);
  EXPECT_THAT(printed, HasSubstr("custom_call_target=\"a\\\"b\\\\c\""));
  EXPECT_THAT(printed, HasSubstr("backend_config=\"line1\\nline2\""));
  EXPECT_THAT(printed, HasSubstr("frontend_attributes={k=\"v\\\"w\"}"));
  // A key that needs quotes keeps them.
  c->mutable_frontend_attributes()->Set("a b", "1");
  EXPECT_THAT(PrintHloInstruction(*c), HasSubstr("{\"a b\"=\"1\",k="));
  // Keys longer than one 16-byte block of the identifier scan: the byte
  // that needs quotes after the block, or none.
  c->mutable_frontend_attributes()->Set("a_key_of_twenty_one b", "2");
  c->mutable_frontend_attributes()->Set("a_plain_key.of-length$24", "3");
  EXPECT_THAT(PrintHloInstruction(*c), HasSubstr("\"a_key_of_twenty_one b\"=\"2\""));
  EXPECT_THAT(PrintHloInstruction(*c), HasSubstr(",a_plain_key.of-length$24=\"3\""));
  auto again = Parse(PrintHloModule(*m));
  ASSERT_NE(again, nullptr);
  const std::string* value = Find(*again, "c")->frontend_attributes().Find("a b");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(*value, "1");
}

TEST(PrinterTest, LegacyCompareAndDeepTuplesPrint) {
  auto m = Parse(R"hlo(HloModule m
ENTRY e {
  a = f32[] parameter(0)
  ROOT g = pred[] less-than(a, a)
}
)hlo");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintHloInstruction(*Find(*m, "g")), "g = pred[] compare(a, a), direction=LT");

  std::string deep = absl::StrCat(std::string(300, '('), "f32[]", std::string(300, ')'));
  auto d = Parse(absl::StrCat("HloModule m\nENTRY e {\n  ROOT a = ", deep, " parameter(0)\n}\n"));
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(PrintHloModule(*d), HasSubstr(deep));
}
}  // namespace
}  // namespace hilo

namespace hilo {
namespace {

TEST(PrinterOrderTest, CreatedInstructionsPrintBeforeTheirFirstUser) {
  auto parsed = ParseHloModule(R"(HloModule m

ENTRY e {
  a = f32[4]{0} parameter(0)
  b = f32[4]{0} negate(a)
  ROOT r = f32[4]{0} add(b, b)
}
)",
                               "order.hlo");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  HloModule& module = **parsed;
  HloComputation* entry = module.entry_computation();
  HloInstruction* a = entry->parameter_instruction(0);
  // A pass adds exp(a) and abs(exp) and makes the root use them: appended to
  // the list, they must still print before the root, operands first.
  HloInstruction* e = entry->AddInstruction(
      HloInstruction::Create(HloOpcode::kExp, a->shape(), {a}, "e"));
  HloInstruction* f = entry->AddInstruction(
      HloInstruction::Create(HloOpcode::kAbs, a->shape(), {e}, "f"));
  entry->root_instruction()->ReplaceOperandWith(1, f);
  // A created instruction nothing uses goes last.
  entry->AddInstruction(HloInstruction::Create(HloOpcode::kCopy, a->shape(), {a}, "unused"));
  const std::string printed = PrintHloModule(module);
  const size_t pos_b = printed.find("  b = ");
  const size_t pos_e = printed.find("  e = ");
  const size_t pos_f = printed.find("  f = ");
  const size_t pos_r = printed.find("ROOT r = ");
  const size_t pos_unused = printed.find("  unused = ");
  ASSERT_NE(pos_e, std::string::npos) << printed;
  ASSERT_NE(pos_f, std::string::npos) << printed;
  EXPECT_LT(pos_b, pos_e) << printed;  // parsed instructions keep their order
  EXPECT_LT(pos_e, pos_f) << printed;
  EXPECT_LT(pos_f, pos_r) << printed;
  EXPECT_GT(pos_unused, pos_r) << printed;
  auto reparsed = ParseHloModule(printed, "printed.hlo");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(PrintHloModule(**reparsed), printed);
}
}  // namespace
}  // namespace hilo

// --- Attributes in any order, and the streaming form --------------------------

namespace hilo {
namespace {

// Every typed attribute, written in an order that is not XLA's (reverse, for
// most), prints back as written; default values written explicitly stay.
TEST(PrinterAttributeTest, TypedAttributesKeepTheirWrittenOrder) {
  ExpectRoundTrip(R"hlo(HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %e (p: f32[4], q: f32[4,4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[4,4]{1,0} parameter(1)
  %ar = f32[4]{0} all-reduce(f32[4]{0} %p), backend_config="cfg", metadata={op_name="a"}, frontend_attributes={b="2",a="1"}, sharding={replicated}, to_apply=%add, use_global_device_ids=true, constrain_layout=false, replica_groups=[1,2]<=[2], channel_id=3
  %cp = f32[4]{0} collective-permute(f32[4]{0} %ar), source_target_pairs={{0,1},{1,0}}, channel_id=4, control-predecessors={%ar}
  %d = f32[4]{0} dot(f32[4,4]{1,0} %q, f32[4]{0} %cp), rhs_contracting_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={}, lhs_batch_dims={}
  %cc = (f32[4]{0}, s32[]) custom-call(f32[4]{0} %d), api_version=API_VERSION_ORIGINAL, custom_call_target="", metadata={}, frontend_attributes={}
  %g = f32[4]{0} get-tuple-element((f32[4]{0}, s32[]) %cc), index=0
  ROOT %t = f32[4]{0} transpose(f32[4]{0} %g), dimensions={0}
}
)hlo");
}

// Attributes a pass sets on an instruction that had none print in XLA's
// order, whatever order they were set in.
TEST(PrinterAttributeTest, SetAttributesPrintInXlaOrder) {
  auto m = Parse(R"hlo(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(p), custom_call_target="t"
}
)hlo");
  ASSERT_NE(m, nullptr);
  HloInstruction* c = Find(*m, "c");
  c->set_backend_config("b");
  c->set_metadata("op_name=\"m\"");
  c->mutable_frontend_attributes()->Set("k", "v");
  c->set_sharding("{maximal device=0}");
  c->set_api_version(4);
  c->set_channel_id(5);
  EXPECT_EQ(PrintHloInstruction(*c),
            "c = f32[4] custom-call(p), custom_call_target=\"t\", channel_id=5, "
            "api_version=API_VERSION_TYPED_FFI, sharding={maximal device=0}, "
            "frontend_attributes={k=\"v\"}, metadata={op_name=\"m\"}, backend_config=\"b\"");
}

// Records every piece the printer writes; fails from write number `fail_at`.
class RecordingSink final : public OutputSink {
 public:
  explicit RecordingSink(int fail_at = -1) : fail_at_(fail_at) {}
  absl::Status Write(absl::string_view text) override {
    ++writes;
    if (writes == fail_at_) return absl::ResourceExhaustedError("disk full");
    text_.append(text.data(), text.size());
    largest = std::max(largest, text.size());
    return absl::OkStatus();
  }
  const std::string& text() const { return text_; }
  int writes = 0;
  size_t largest = 0;

 private:
  int fail_at_;
  std::string text_;
};

// A module of about 3 MB: many instructions, and one constant whose text
// alone is larger than the printer's buffer.
std::string LargeModuleText() {
  std::string text = "HloModule large\n\nENTRY %e (p: s32[600000]) -> s32[600000] {\n";
  absl::StrAppend(&text, "  %p = s32[600000]{0} parameter(0)\n");
  absl::StrAppend(&text, "  %c = s32[600000]{0} constant({");
  for (int i = 0; i < 600000; ++i) absl::StrAppend(&text, i == 0 ? "" : ", ", i % 10);
  absl::StrAppend(&text, "})\n");
  std::string last = "p";
  for (int i = 0; i < 20000; ++i) {
    std::string name = absl::StrCat("add.", i);
    absl::StrAppend(&text, "  %", name, " = s32[600000]{0} add(s32[600000]{0} %", last,
                    ", s32[600000]{0} %c), metadata={op_name=\"layer/", i, "\"}\n");
    last = name;
  }
  absl::StrAppend(&text, "  ROOT %r = s32[600000]{0} negate(s32[600000]{0} %", last, ")\n}\n");
  return text;
}

// Streams the module parsed from `text`: the bytes are `text` (a round
// trip) and those of the string form.
RecordingSink ExpectStreamedRoundTrip(const std::string& text) {
  RecordingSink sink;
  auto m = Parse(text);
  if (m == nullptr) return sink;
  EXPECT_TRUE(PrintHloModule(*m, sink).ok());
  EXPECT_EQ(sink.text(), text);
  EXPECT_EQ(sink.text(), PrintHloModule(*m));
  return sink;
}

TEST(PrinterStreamTest, StreamsLargeModulesInPiecesIdenticalToTheString) {
  const std::string text = LargeModuleText();
  ASSERT_GT(text.size(), 2 * kPrintBufferSize);
  RecordingSink sink = ExpectStreamedRoundTrip(text);
  EXPECT_GT(sink.writes, 2);
  // The constant's text went to the sink in one piece, bypassing the buffer.
  EXPECT_GT(sink.largest, kPrintBufferSize);
}

TEST(PrinterStreamTest, SmallModulesAreOneWrite) {
  EXPECT_EQ(ExpectStreamedRoundTrip(std::string(kXlaDump)).writes, 1);
}

TEST(PrinterStreamTest, TheFirstSinkErrorStopsPrinting) {
  auto m = Parse(LargeModuleText());
  ASSERT_NE(m, nullptr);
  RecordingSink sink(/*fail_at=*/1);
  absl::Status status = PrintHloModule(*m, sink);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_EQ(sink.writes, 1);  // nothing is written after the error
  EXPECT_TRUE(sink.text().empty());
}


// `m` printed with the switch `name` on (unset), then off ("0").
std::pair<std::string, std::string> PrintOnAndOff(const char* name, const HloModule& m) {
  unsetenv(name);
  std::string on = PrintHloModule(m);
  setenv(name, "0", 1);
  std::string off = PrintHloModule(m);
  unsetenv(name);
  return {std::move(on), std::move(off)};
}

// A module whose entry is a chain of negates, n0 to n<layers> (the root r
// after them), after the computations in `before`.
std::string NegateChainModule(absl::string_view before, int layers) {
  std::string text = absl::StrCat("HloModule m\n\n", before,
                                  "ENTRY e {\n  p = f32[4]{0} parameter(0)\n"
                                  "  n0 = f32[4]{0} negate(p)\n");
  for (int i = 1; i <= layers; ++i) {
    absl::StrAppend(&text, "  n", i, " = f32[4]{0} negate(n", i - 1, ")\n");
  }
  absl::StrAppend(&text, "  ROOT r = f32[4]{0} negate(n", layers, ")\n}\n");
  return text;
}

// Where the line defining `name` starts in `printed` (a failure if nowhere).
size_t LineOf(const std::string& printed, absl::string_view name) {
  const size_t pos = printed.find(absl::StrCat("  ", name, " = "));
  EXPECT_NE(pos, std::string::npos) << name << "\n" << printed;
  return pos;
}

// The printer keeps the text of the shapes it wrote, by shape object
// (HILO_PRINT_SHAPE_CACHE): more distinct shapes than its table has entries
// (512), each used again far from its definition so that entries are
// evicted and refilled, and tuples longer than an entry holds (55 bytes),
// print exactly as with the table switched off, and as written.
TEST(PrinterTest, ShapeTextsPrintAsWithoutTheTable) {
  std::string text = "HloModule m\n\nENTRY e {\n";
  constexpr int kShapes = 1500;
  auto shape = [](int i) { return absl::StrCat("f32[", i + 1, ",3]{1,0}"); };
  for (int i = 0; i < kShapes; ++i) {
    absl::StrAppend(&text, "  p", i, " = ", shape(i), " parameter(", i, ")\n");
  }
  for (int j = 0; j < kShapes; ++j) {
    const int i = (j * 7919) % kShapes;  // every shape, in a scattered order
    absl::StrAppend(&text, "  a", j, " = ", shape(i), " add(", shape(i), " p", i, ", ", shape(i),
                    " p", i, ")\n");
  }
  std::string tuple_shape = "(";
  std::string operands;
  for (int i = 0; i < 7; ++i) {
    const std::string sep = i == 0 ? "" : i == 5 ? ", /*index=5*/" : ", ";
    absl::StrAppend(&tuple_shape, sep, shape(i));
    absl::StrAppend(&operands, sep, shape(i), " p", i);
  }
  tuple_shape += ")";
  ASSERT_GT(tuple_shape.size(), 55u);
  absl::StrAppend(&text, "  t = ", tuple_shape, " tuple(", operands, ")\n");
  absl::StrAppend(&text, "  ROOT g = ", shape(0), " get-tuple-element(", tuple_shape, " t), index=0\n");
  text += "}\n";
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  const auto [with_table, without] = PrintOnAndOff("HILO_PRINT_SHAPE_CACHE", *m);
  EXPECT_EQ(with_table, without);
  EXPECT_EQ(with_table, text);
}

// Each interned attribute list is classified once, when interned
// (AttributeOrder::Name): many distinct lists, the same names in two orders
// (two lists) and a name of a typed attribute in either place, print as
// written.
TEST(PrinterTest, AttributeListsPrintAsWritten) {
  std::string text = "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n";
  constexpr int kLists = 300;
  for (int j = 0; j < 2 * kLists; ++j) {
    const int i = (j * 7919) % kLists;  // every name, in a scattered order
    const std::string named = absl::StrCat("attr_", i, "=", j);
    absl::StrAppend(&text, "  b", j, " = f32[2,2]{1,0} broadcast(f32[2]{0} p), ",
                    j % 2 == 0 ? "dimensions={0}, " + named : named + ", dimensions={1}", "\n");
  }
  text += "  ROOT r = f32[2]{0} negate(f32[2]{0} p)\n}\n";
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintHloModule(*m), text);
}

// The printer reads an instruction's collective, dot, frontend and rare
// attributes only when it has their group (HILO_PRINT_GROUP_TEST): set
// after parsing (not in the attribute order), one of each group prints
// exactly as with every attribute read, and at all.
TEST(PrinterTest, AttributesOfEachGroupPrintAsWithoutTheGroupTest) {
  auto m = Parse(R"(HloModule m

ENTRY e {
  a = f32[2,2]{1,0} parameter(0)
  b = f32[2,2]{1,0} negate(f32[2,2]{1,0} a)
  c = f32[2,2]{1,0} negate(f32[2,2]{1,0} b)
  d = f32[2,2]{1,0} dot(f32[2,2]{1,0} b, f32[2,2]{1,0} c)
  ROOT r = f32[2,2]{1,0} negate(f32[2,2]{1,0} d)
}
)");
  ASSERT_NE(m, nullptr);
  auto named = [&](absl::string_view name) -> HloInstruction* {
    for (HloInstruction* inst : m->entry_computation()->instructions()) {
      if (inst->name() == name) return inst;
    }
    return nullptr;
  };
  HloInstruction* b = named("b");
  HloInstruction* c = named("c");
  HloInstruction* d = named("d");
  HloInstruction* r = named("r");
  ASSERT_TRUE(b != nullptr && c != nullptr && d != nullptr && r != nullptr);
  b->set_channel_id(5);
  c->mutable_frontend_attributes()->Append("k", "v");
  d->mutable_dot_dimension_numbers()->lhs_contracting_dimensions = {1};
  r->set_sharding("{replicated}");
  const auto [with_test, without] = PrintOnAndOff("HILO_PRINT_GROUP_TEST", *m);
  EXPECT_EQ(with_test, without);
  EXPECT_THAT(with_test, HasSubstr("negate(f32[2,2]{1,0} a), channel_id=5\n"));
  EXPECT_THAT(with_test, HasSubstr("negate(f32[2,2]{1,0} b), frontend_attributes={k=\"v\"}\n"));
  EXPECT_THAT(with_test, HasSubstr("c), lhs_contracting_dims={1}\n"));
  EXPECT_THAT(with_test, HasSubstr("negate(f32[2,2]{1,0} d), sharding={replicated}\n"));
}

// The writer copies short pieces inline, by width (1-3, 4-7, 8-15, 16-32
// bytes, longer by memcpy): names of every length up to 40 print as written.
TEST(PrinterTest, NamesOfEveryLengthPrintAsWritten) {
  std::string text = "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n";
  std::string previous = "p";
  for (int n = 1; n <= 40; ++n) {  // "a", "ab", ...: distinct, and none is `p`
    std::string name(static_cast<size_t>(n), 'a');
    for (int i = 0; i < n; ++i) name[static_cast<size_t>(i)] = static_cast<char>('a' + i % 26);
    absl::StrAppend(&text, n == 40 ? "  ROOT " : "  ", name, " = f32[2]{0} negate(f32[2]{0} ",
                    previous, ")\n");
    previous = name;
  }
  text += "}\n";
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintHloModule(*m), text);
}

// The printer places pass-created instructions by marking those placed in
// a slot per unique id when a computation's created ones have ids in a
// short range (HILO_PRINT_ORDER_ID_MARKS), else in a hash set: a chain of
// layers each given created instructions (dense ids), a second computation
// whose two created instructions have ids far apart (the hash set), and a
// computation built outside any module (every id -1: the hash set) print
// the same either way, each created instruction before its first user.
TEST(PrinterTest, CreatedInstructionsArePlacedAsWithTheHashSet) {
  constexpr int kLayers = 40;
  auto m = Parse(NegateChainModule(
      "called {\n  q = f32[4]{0} parameter(0)\n  ROOT s = f32[4]{0} negate(q)\n}\n\n", kLayers));
  ASSERT_NE(m, nullptr);
  HloComputation* entry = m->entry_computation();
  HloComputation* called = Find(*m, "q")->parent();
  const Shape& f4 = Find(*m, "p")->shape();
  // One created instruction in `called`, then the layers' (dense ids), then
  // another in `called`: its two ids are kLayers * 2 apart.
  HloInstruction* q = Find(*m, "q");
  HloInstruction* c1 = called->AddInstruction(HloInstruction::Create(HloOpcode::kExp, f4, {q}, "c1"));
  for (int i = 0; i < kLayers; ++i) {
    HloInstruction* n = Find(*m, absl::StrCat("n", i));
    HloInstruction* e = entry->AddInstruction(
        HloInstruction::Create(HloOpcode::kExp, f4, {n}, absl::StrCat("e", i)));
    HloInstruction* a = entry->AddInstruction(
        HloInstruction::Create(HloOpcode::kAbs, f4, {e}, absl::StrCat("a", i)));
    Find(*m, absl::StrCat("n", i + 1))->ReplaceOperandWith(0, a);
  }
  HloInstruction* c2 = called->AddInstruction(HloInstruction::Create(HloOpcode::kAbs, f4, {c1}, "c2"));
  Find(*m, "s")->ReplaceOperandWith(0, c2);
  auto outside = std::make_unique<HloComputation>("outside");
  HloInstruction* x = outside->AddInstruction(HloInstruction::CreateParameter(0, f4, "x"));
  HloInstruction* y = outside->AddInstruction(HloInstruction::Create(HloOpcode::kExp, f4, {x}, "y"));
  outside->set_root_instruction(outside->AddInstruction(
      HloInstruction::Create(HloOpcode::kAbs, f4, {y}, "z")));
  EXPECT_EQ(x->unique_id(), y->unique_id());
  m->AddComputation(std::move(outside), /*is_entry=*/false);

  const auto [marks, hashed] = PrintOnAndOff("HILO_PRINT_ORDER_ID_MARKS", *m);
  EXPECT_EQ(marks, hashed);
  auto at = [&](absl::string_view line) { return LineOf(marks, line); };
  for (int i = 0; i < kLayers; ++i) {
    EXPECT_LT(at(absl::StrCat("n", i)), at(absl::StrCat("e", i)));
    EXPECT_LT(at(absl::StrCat("e", i)), at(absl::StrCat("a", i)));
    EXPECT_LT(at(absl::StrCat("a", i)), at(absl::StrCat("n", i + 1)));
  }
  EXPECT_LT(at("q"), at("c1"));
  EXPECT_LT(at("c1"), at("c2"));
  EXPECT_LT(at("x"), at("y"));
  auto reparsed = ParseHloModule(marks, "printed.hlo");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(PrintHloModule(**reparsed), marks);
}

// The printer finds the parsed instructions that use a created one from the
// created side (its users and control successors, HILO_PRINT_ORDER_BY_USERS)
// instead of searching every parsed instruction's operands and control
// predecessors: layers whose parsed instructions use created ones through an
// operand, through a control edge only, or both, print the same either way,
// each created instruction before the parsed one that needs it.
TEST(PrinterTest, UsersOfCreatedInstructionsAreFoundFromTheCreatedSide) {
  constexpr int kLayers = 30;
  auto m = Parse(NegateChainModule("", kLayers));
  ASSERT_NE(m, nullptr);
  HloComputation* entry = m->entry_computation();
  const Shape& f4 = Find(*m, "p")->shape();
  for (int i = 0; i < kLayers; ++i) {
    HloInstruction* n = Find(*m, absl::StrCat("n", i));
    HloInstruction* next = Find(*m, absl::StrCat("n", i + 1));
    HloInstruction* c = entry->AddInstruction(
        HloInstruction::Create(HloOpcode::kExp, f4, {n}, absl::StrCat("c", i)));
    switch (i % 3) {
      case 0:  // an operand
        next->ReplaceOperandWith(0, c);
        break;
      case 1:  // a control edge only
        c->AddControlDependencyTo(next);
        break;
      default:  // both
        next->ReplaceOperandWith(0, c);
        c->AddControlDependencyTo(next);
        break;
    }
  }
  const auto [by_users, searched] = PrintOnAndOff("HILO_PRINT_ORDER_BY_USERS", *m);
  EXPECT_EQ(by_users, searched);
  auto at = [&](absl::string_view line) { return LineOf(by_users, line); };
  for (int i = 0; i < kLayers; ++i) {
    EXPECT_LT(at(absl::StrCat("n", i)), at(absl::StrCat("c", i)));
    EXPECT_LT(at(absl::StrCat("c", i)), at(absl::StrCat("n", i + 1))) << by_users;
  }
  auto reparsed = ParseHloModule(by_users, "printed.hlo");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(PrintHloModule(**reparsed), by_users);
}

}  // namespace
}  // namespace hilo
