// PassOptions: the hilo-opt flags passes read. A flag that is given
// overrides the environment variable the original reads; nullopt means
// "not given: read the environment".
#ifndef HILO_PASS_PASS_OPTIONS_H_
#define HILO_PASS_PASS_OPTIONS_H_

#include <cstdint>
#include <optional>

namespace hilo {

struct PassOptions {
  // NEURON_COLLECTIVE_MATMUL_NXD / --collective-matmul-nxd
  std::optional<bool> collective_matmul_nxd;
  // NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE / --collective-permute-aggressive
  std::optional<bool> collective_permute_aggressive;
  // NEURON_COLLECTIVE_MATMUL_SB_TO_SB_THRESHOLD_IN_MB / --sb-to-sb-threshold-mb=N
  std::optional<int64_t> sb_to_sb_threshold_mb;
  // --collective-matmul-strict: refuse folds that are not exact under the
  // kernel's contract.
  bool collective_matmul_strict = false;
  // --weight-chain-copy-bitcast: WeightInLHS/WeightInRHS also walk bitcast
  // and copy (beyond the original, whose set is {parameter, gte, convert,
  // reshape}; docs/passes/looped-einsum.md).
  bool weight_chain_copy_bitcast = false;
  // --unique-channel-ids-skip-send-recv: the enforcer leaves send/recv alone.
  bool unique_channel_ids_skip_send_recv = false;
  // --force-stream-id-injection: in neuron-collective-pipeline, run the
  // injector even when the checker found stream ids.
  bool force_stream_id_injection = false;
  // Whether passes keep, for each candidate they look at, what
  // ReportDetails() and Explanations() list (names, reasons, explanation
  // lines). Off, those two describe nothing per candidate, while Run,
  // ChangeSummary() and Warnings() are the same. hilo-opt turns it off
  // unless --report or --explain asks: on a large module that is ~10^5
  // strings built for nobody (docs/performance.md, "eighth session").
  bool record_details = true;
};

}  // namespace hilo

#endif  // HILO_PASS_PASS_OPTIONS_H_
