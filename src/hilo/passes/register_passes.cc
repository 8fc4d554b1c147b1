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
// different lines. Names are what `--passes=` and the report use.
void RegisterBuiltinPasses(PassRegistry& registry) {
  registry.RegisterPass("dce", [](const PassOptions&) { return std::make_unique<HloDCE>(); });
  registry.RegisterPass(std::string(CollectiveStreamIdChecker::kName), [](const PassOptions& o) { return std::make_unique<CollectiveStreamIdChecker>(o); });
  registry.RegisterPass(std::string(NeuronCollectiveStreamIdInjector::kName), [](const PassOptions& o) { return std::make_unique<NeuronCollectiveStreamIdInjector>(o); });
  registry.RegisterPass(std::string(NeuronUniqueChannelIdEnforcer::kName), [](const PassOptions& o) { return std::make_unique<NeuronUniqueChannelIdEnforcer>(o); });
  registry.RegisterPass(std::string(NeuronLoopedEinsumReplacer::kName), [](const PassOptions& o) { return std::make_unique<NeuronLoopedEinsumReplacer>(o); });
  registry.RegisterPass(std::string(NeuronLoopedEinsumTokenReplacer::kName), [](const PassOptions& o) { return std::make_unique<NeuronLoopedEinsumTokenReplacer>(o); });
  registry.RegisterPipelineBuilder(std::string(kNeuronCollectivePipelineName), std::string(kNeuronCollectivePipelineDescription), [](const PassRegistry&, const PassOptions& o, HloPassPipeline* p) { return BuildNeuronCollectivePipeline(o, p); });
}

}  // namespace hilo
