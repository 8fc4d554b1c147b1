#include "hilo/passes/neuron_collective_pipeline.h"

#include <memory>
#include <optional>
#include <string>

#include "hilo/passes/collective_stream_id_checker.h"
#include "hilo/passes/neuron_collective_stream_id_injector.h"
#include "hilo/passes/neuron_looped_einsum_replacer.h"
#include "hilo/passes/neuron_looped_einsum_token_replacer.h"
#include "hilo/passes/neuron_unique_channel_id_enforcer.h"

namespace hilo {

absl::Status BuildNeuronCollectivePipeline(const PassOptions& options, HloPassPipeline* pipeline) {
  if (pipeline == nullptr) return absl::InvalidArgumentError("no pipeline to add to");
  auto* checker = static_cast<CollectiveStreamIdChecker*>(
      pipeline->AddPass(std::make_unique<CollectiveStreamIdChecker>(options)));
  pipeline->AddPass(std::make_unique<NeuronLoopedEinsumReplacer>(options));
  pipeline->AddPass(std::make_unique<NeuronLoopedEinsumTokenReplacer>(options));
  const bool skip_when_present = !options.force_stream_id_injection;
  HloPassPipeline::SkipCondition skip = nullptr;
  if (skip_when_present) {
    // The checker ran first in this pipeline; its object lives as long as
    // the pipeline, so its answer is read when the injector's turn comes.
    skip = [checker](const HloModule&) -> std::optional<std::string> {
      if (!checker->stream_id_present()) return std::nullopt;
      return std::string(
          "collective-stream-id-checker found stream_id attributes at the start of the "
          "pipeline; --force-stream-id-injection runs the injector anyway");
    };
  }
  pipeline->AddPass(
      std::make_unique<NeuronCollectiveStreamIdInjector>(options, skip_when_present),
      std::move(skip));
  pipeline->AddPass(std::make_unique<NeuronUniqueChannelIdEnforcer>(options));
  return absl::OkStatus();
}

}  // namespace hilo
