// GenerateTransformerModule: a synthetic tensor-parallel x FSDP transformer
// module in XLA's HLO text syntax, for benchmarks, pass tests and the
// interpreter. Used by the hilo-gen tool and by the benchmarks in bench/.
//
// The module is what a per-device (SPMD) dump of a Neuron FSDP + TP training
// step looks like, reduced to the collective skeleton the passes read:
//
//   for each layer L (x: bf16[B, S/T, H], the sequence-parallel activation)
//     w_in  = parameter bf16[H/F, NH/T, HD]           FSDP x TP sharded weight
//     (w_in_f, tok) = all-gather(w_in, tok) dims={0}   FSDP, token-threaded
//     w_in_t = all-gather(w_in_f) dims={1}             TP: a looped-einsum weight
//     x_g   = all-gather(x) dims={1}                   TP, sequence gather
//     x_n   = multiply(x_g, x_g)                       (a norm: keeps the LHS
//                                                       from hiding the weight)
//     h     = dot(x_n, w_in_t)  bf16[B,S,NH,HD]        one contracting dim, metadata
//     a     = multiply(tanh(h), h)
//     w_out = parameter bf16[NH/T, HD, H/F]
//     (w_out_f, tok) = all-gather(w_out, tok) dims={2} FSDP, token-threaded
//     w_out_t = all-gather(w_out_f) dims={0}           TP
//     y     = dot(a, w_out_t)   bf16[B,S,H]            two contracting dims, metadata
//     y_s   = reduce-scatter(y) dims={1}               TP
//     x     = add(x, y_s)
//   ROOT (x, tok)
//
// Devices are numbered 0..T*F-1, TP-major: the TP groups are the F runs of
// T consecutive ids, the FSDP groups the T sets of F ids with stride T.
// Every collective gets a distinct channel id (unless `channel_ids` says
// otherwise) and a `collective_type` frontend attribute (tp_all_gather,
// tp_reduce_scatter, fsdp_all_gather) as Neuron's frontend writes them.
// The output is deterministic.
#ifndef HILO_TOOLS_HILO_GEN_TRANSFORMER_GENERATOR_H_
#define HILO_TOOLS_HILO_GEN_TRANSFORMER_GENERATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace hilo::gen {

struct TransformerOptions {
  int64_t layers = 2;
  int64_t tp = 8;
  int64_t fsdp = 4;
  int64_t batch = 1;
  int64_t seq = 2048;
  int64_t hidden = 4096;
  int64_t heads = 32;
  int64_t head_dim = 128;
  bool iota_groups = false;  // `[4,8]<=[32]` instead of `{{0,1,..},..}`
  // "unique": one id per collective; "collide": every fourth collective
  // repeats the id before it; "none": no channel ids.
  std::string channel_ids = "unique";
  bool layouts = true;         // `{2,1,0}` after every array shape
  bool operand_shapes = true;  // `bf16[2]{0} %x` rather than `%x`
  std::string module_name;     // default tp_fsdp_transformer_L<layers>
};

// Instructions per layer and outside the layers.
inline constexpr int64_t kInstructionsPerLayer = 18;
inline constexpr int64_t kFixedInstructions = 6;

inline int64_t InstructionCount(int64_t layers) {
  return kFixedInstructions + kInstructionsPerLayer * layers;
}
// The smallest layer count (at least 1) giving at least `instructions`.
int64_t LayersForInstructionCount(int64_t instructions);

// The module text; an InvalidArgument error if the dimensions do not divide
// (seq and heads by tp, hidden by fsdp) or a count is not positive.
absl::StatusOr<std::string> GenerateTransformerModule(const TransformerOptions& options);

}  // namespace hilo::gen

#endif  // HILO_TOOLS_HILO_GEN_TRANSFORMER_GENERATOR_H_
