// pass/pass_name.h and the registry's use of it: `-` and `_` alike in pass
// names, "did you mean" for an unknown name, and a description for every
// built-in pass (hilo-opt --list-passes).
#include "hilo/pass/pass_name.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/pass/hlo_dce.h"
#include "hilo/pass/pass_registry.h"
#include "hilo/passes/register_passes.h"

namespace hilo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PassNameTest, NormalizeMakesUnderscoresDashes) {
  EXPECT_EQ(NormalizePassName("neuron_looped_einsum_replacer"), "neuron-looped-einsum-replacer");
  EXPECT_EQ(NormalizePassName("collective-stream-id-checker"), "collective-stream-id-checker");
  EXPECT_EQ(NormalizePassName(""), "");
}

TEST(PassNameTest, EditDistance) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("dce", ""), 3u);
  EXPECT_EQ(EditDistance("", "dce"), 3u);
  EXPECT_EQ(EditDistance("dce", "dce"), 0u);
  EXPECT_EQ(EditDistance("dce", "dec"), 2u);      // no transpositions
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("replacr", "replacer"), 1u);
}

TEST(PassNameTest, SuggestsTheClosestName) {
  const std::vector<std::string> names = {"dce", "neuron_looped_einsum_replacer",
                                          "neuron_looped_einsum_token_replacer",
                                          "neuron-collective-pipeline"};
  EXPECT_EQ(SuggestPassName("dcee", names), "dce");
  EXPECT_EQ(SuggestPassName("DCE", names), "dce");
  EXPECT_EQ(SuggestPassName("neuron-looped-einsum-replacr", names), "neuron_looped_einsum_replacer");
  EXPECT_EQ(SuggestPassName("neuron_collective_pipelin", names), "neuron-collective-pipeline");
  // Nothing close, and a part of several names, get no suggestion.
  EXPECT_EQ(SuggestPassName("frobnicate", names), std::nullopt);
  EXPECT_EQ(SuggestPassName("looped", names), std::nullopt);
  // The only name containing it.
  EXPECT_EQ(SuggestPassName("token", names), "neuron_looped_einsum_token_replacer");
  EXPECT_EQ(SuggestPassName("", names), std::nullopt);
  EXPECT_EQ(SuggestPassName(std::string(300, 'd'), names), std::nullopt);
}

PassRegistry::PassFactory Dce() {
  return [](const PassOptions&) { return std::make_unique<HloDCE>(); };
}

TEST(PassNameTest, RegistryTakesDashesAndUnderscoresAlike) {
  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  ASSERT_TRUE(registry.status().ok()) << registry.status();
  EXPECT_TRUE(registry.HasPass("neuron-looped-einsum-replacer"));
  EXPECT_TRUE(registry.HasPass("collective_stream_id_checker"));
  EXPECT_TRUE(registry.HasPipeline("neuron_collective_pipeline"));
  EXPECT_EQ(registry.RegisteredName("aws-neuron-collective-stream-id-injector"),
            "aws_neuron_collective_stream_id_injector");
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline = registry.BuildPipeline(
      {"neuron-unique-channel-id-enforcer", "neuron_collective_pipeline"}, PassOptions());
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  // The passes keep their registered names.
  EXPECT_EQ((*pipeline)->pass(0)->name(), "neuron_unique_channel_id_enforcer");
}

TEST(PassNameTest, UnknownNameGetsADidYouMean) {
  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
      registry.BuildPipeline({"neuron-looped-einsum-replacr"}, PassOptions());
  ASSERT_FALSE(pipeline.ok());
  EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(pipeline.status().message(),
              HasSubstr("unknown pass 'neuron-looped-einsum-replacr'; did you mean "
                        "'neuron_looped_einsum_replacer'? valid passes: "));
  EXPECT_THAT(registry.UnknownNameError("frobnicate").message(), Not(HasSubstr("did you mean")));
}

TEST(PassNameTest, NamesDifferingOnlyInDashesAreTheSameName) {
  PassRegistry registry;
  registry.RegisterPass("my-pass", Dce());
  EXPECT_TRUE(registry.status().ok());
  registry.RegisterPass("my_pass", Dce());
  EXPECT_EQ(registry.status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(PassNameTest, EveryBuiltinPassHasADescription) {
  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  for (const std::string& name : registry.PassNames()) {
    EXPECT_FALSE(registry.PassDescription(name).empty()) << name;
    EXPECT_EQ(registry.PassDescription(NormalizePassName(name)), registry.PassDescription(name));
  }
  EXPECT_EQ(registry.PassDescription("no-such-pass"), "");
}

}  // namespace
}  // namespace hilo
