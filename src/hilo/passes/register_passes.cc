#include "hilo/passes/register_passes.h"

#include <memory>

#include "hilo/pass/hlo_dce.h"
#include "hilo/passes/collective_stream_id_checker.h"
#include "hilo/passes/neuron_collective_stream_id_injector.h"
#include "hilo/passes/neuron_collective_pipeline.h"
#include "hilo/passes/neuron_looped_einsum_replacer.h"
#include "hilo/passes/neuron_looped_einsum_token_replacer.h"
#include "hilo/passes/neuron_unique_channel_id_enforcer.h"

namespace hilo {

// One registration per line, so that passes landing at the same time touch
// different lines. Names are what `--passes=` and the report use; the
// description is --list-passes' one line.
void RegisterBuiltinPasses(PassRegistry& registry) {
  registry.RegisterPass("dce", "removes instructions nothing uses and computations nothing calls", [](const PassOptions&) { return std::make_unique<HloDCE>(); });
  registry.RegisterPass(std::string(CollectiveStreamIdChecker::kName), "reports whether a collective already has a stream_id (never changes the module)", [](const PassOptions& o) { return std::make_unique<CollectiveStreamIdChecker>(o); });
  registry.RegisterPass(std::string(NeuronCollectiveStreamIdInjector::kName), "stamps stream_id 0 (TP groups) or 1 (FSDP groups) on every collective", [](const PassOptions& o) { return std::make_unique<NeuronCollectiveStreamIdInjector>(o); });
  registry.RegisterPass(std::string(NeuronUniqueChannelIdEnforcer::kName), "gives a fresh channel_id to every collective whose id was used before", [](const PassOptions& o) { return std::make_unique<NeuronUniqueChannelIdEnforcer>(o); });
  registry.RegisterPass(std::string(NeuronLoopedEinsumReplacer::kName), "folds dot(all-gather(W), X) into an AwsNeuronCollectiveMatmul custom-call", [](const PassOptions& o) { return std::make_unique<NeuronLoopedEinsumReplacer>(o); });
  registry.RegisterPass(std::string(NeuronLoopedEinsumTokenReplacer::kName), "reroutes users of a token-threaded all-gather's token to its token operand (NXD only)", [](const PassOptions& o) { return std::make_unique<NeuronLoopedEinsumTokenReplacer>(o); });
  registry.RegisterPipelineBuilder(std::string(kNeuronCollectivePipelineName), std::string(kNeuronCollectivePipelineDescription), [](const PassRegistry&, const PassOptions& o, HloPassPipeline* p) { return BuildNeuronCollectivePipeline(o, p); });
}

}  // namespace hilo
