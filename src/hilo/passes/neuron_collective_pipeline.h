// The `neuron-collective-pipeline` named pipeline: the Neuron collective
// passes in their registration order (seeds 000 and 001):
//   collective-stream-id-checker            (#58)
//   neuron_looped_einsum_replacer           (#63)
//   neuron_looped_einsum_token_replacer     (#64)
//   aws_neuron_collective_stream_id_injector (#81)
//   neuron_unique_channel_id_enforcer       (#82)
// The injector is skipped when the checker found a stream_id at the start
// of the pipeline (or one is present when the injector would run), so
// stream ids a framework already assigned are not overwritten;
// PassOptions::force_stream_id_injection runs it anyway. See
// docs/passes/looped-einsum.md ("The Neuron collective pipeline").
#ifndef HILO_PASSES_NEURON_COLLECTIVE_PIPELINE_H_
#define HILO_PASSES_NEURON_COLLECTIVE_PIPELINE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "hilo/pass/hlo_pass_pipeline.h"
#include "hilo/pass/pass_options.h"

namespace hilo {

inline constexpr absl::string_view kNeuronCollectivePipelineName = "neuron-collective-pipeline";
inline constexpr absl::string_view kNeuronCollectivePipelineDescription =
    "collective-stream-id-checker,neuron_looped_einsum_replacer,"
    "neuron_looped_einsum_token_replacer,aws_neuron_collective_stream_id_injector "
    "(skipped when stream ids are present unless --force-stream-id-injection),"
    "neuron_unique_channel_id_enforcer";

// Appends the five passes to `pipeline`.
absl::Status BuildNeuronCollectivePipeline(const PassOptions& options, HloPassPipeline* pipeline);

}  // namespace hilo

#endif  // HILO_PASSES_NEURON_COLLECTIVE_PIPELINE_H_
