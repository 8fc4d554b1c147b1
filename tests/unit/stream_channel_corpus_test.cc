// The three stream_id / channel_id passes over every module of
// ../shared/corpus/valid whose MANIFEST.tsv says has_collectives=y:
//  - WalkPostOrderUntil gives MakeInstructionPostOrder's order on every
//    computation;
//  - the checker never errs, returns false and leaves the printed module
//    byte-identical;
//  - the injector never errs and stamps every typed collective with "0" or
//    "1" (and "1" only on groups equal to the FSDP exemplar);
//  - the enforcer never errs; afterwards channel ids are unique among the
//    IsCollective ops; the verifier accepts the module unless a send/recv
//    with a done op was renumbered, in which case it must reject it (the
//    channel_id mismatch); with --unique-channel-ids-skip-send-recv
//    semantics the verifier must accept it and send/recv keep their ids;
//  - the collective scan the pipeline's passes share is, after every pass,
//    what a fresh sweep gives.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hilo/analysis/collective_predicates.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/hlo_dce.h"
#include "hilo/pass/hlo_pass_pipeline.h"
#include "hilo/pass/pass_options.h"
#include "hilo/passes/neuron_collective_pipeline.h"
#include "hilo/passes/collective_stream_id_checker.h"
#include "hilo/passes/neuron_collective_stream_id_injector.h"
#include "hilo/passes/neuron_unique_channel_id_enforcer.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "shared_dir.h"

namespace hilo {
namespace {

const std::string kValid = test::SharedDir() + "/corpus/valid";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Files of valid/MANIFEST.tsv with has_collectives == "y".
std::vector<std::string> CollectiveFiles() {
  std::vector<std::string> files;
  std::ifstream in(kValid + "/MANIFEST.tsv");
  std::string line;
  if (!std::getline(in, line)) return files;
  std::vector<std::string> header;
  {
    std::istringstream fields(line);
    std::string f;
    while (std::getline(fields, f, '\t')) header.push_back(f);
  }
  size_t file_col = 0, coll_col = header.size();
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "file") file_col = i;
    if (header[i] == "has_collectives") coll_col = i;
  }
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::istringstream fields(line);
    std::string f;
    while (std::getline(fields, f, '\t')) row.push_back(f);
    if (coll_col < row.size() && row[coll_col] == "y") files.push_back(row[file_col]);
  }
  return files;
}

bool IsSendOrRecv(const HloInstruction* i) {
  return i->opcode() == HloOpcode::kSend || i->opcode() == HloOpcode::kRecv;
}

bool HasDoneUser(const HloInstruction* i) {
  for (const HloInstruction* user : i->users()) {
    if (user->opcode() == HloOpcode::kSendDone || user->opcode() == HloOpcode::kRecvDone) {
      return true;
    }
  }
  return false;
}

// Channel ids (a missing one counts as a value) of IsCollective ops, in
// module and written order; `skip_send_recv` leaves send/recv out.
std::vector<std::optional<int64_t>> CollectiveIds(const HloModule& module, bool skip_send_recv) {
  std::vector<std::optional<int64_t>> ids;
  for (const HloComputation* c : module.computations()) {
    for (const HloInstruction* i : c->instructions()) {
      if (!IsCollective(*i)) continue;
      if (skip_send_recv && IsSendOrRecv(i)) continue;
      ids.push_back(i->channel_id());
    }
  }
  return ids;
}

struct Counts {
  int files = 0;
  int typed_stamped = 0;
  int modules_renumbered = 0;
  int ids_renumbered = 0;
  int send_recv_split = 0;
  int group_mode_warnings = 0;
  int group_mode_rejections = 0;
  int unparsed_listed = 0;
};

// Modules of valid/ that are invalid on purpose (tests/corpus/verify_expectations.tsv,
// kept by the verifier's owner): the passes must not err on them, but the
// verifier can not be green after.
std::set<std::string> InvalidOnPurpose() {
  std::set<std::string> files;
  std::ifstream in(std::string(HILO_SOURCE_DIR) + "/tests/corpus/verify_expectations.tsv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    files.insert(line.substr(0, line.find('\t')));
  }
  return files;
}

// True if the verifier's complaint is about an instruction that a
// group-mode warning names: the enforcer gave it a channel_id in a module
// with several partitions, which changes how many devices its replica
// groups span, so a shape that depended on the group size no longer
// verifies (the first hazard of docs/passes/stream-and-channel-ids.md).
bool GroupModeHazardExplains(const absl::Status& verifier,
                             const std::vector<std::string>& warnings) {
  const std::string message(verifier.message());
  for (const std::string& w : warnings) {
    if (w.find("group mode changes") == std::string::npos) continue;
    // "<opcode> <name> in <computation> had no channel_id ..."
    const size_t name_start = w.find(' ') + 1;
    const std::string name = w.substr(name_start, w.find(' ', name_start) - name_start);
    if (message.find("instruction %" + name + ":") != std::string::npos) return true;
  }
  return false;
}

// Files of valid/ the parser's owner lists as not round-tripping
// (tests/corpus/valid_roundtrip_exceptions.tsv) or as rejected on purpose
// (tests/corpus/valid_rejected.tsv); one that does not parse is skipped
// here, any other parse failure is a failure of this test.
std::set<std::string> RoundTripExceptions() {
  std::set<std::string> files;
  for (const char* list : {"valid_roundtrip_exceptions.tsv", "valid_rejected.tsv"}) {
    std::ifstream in(std::string(HILO_SOURCE_DIR) + "/tests/corpus/" + list);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      files.insert(line.substr(0, line.find('\t')));
    }
  }
  return files;
}

// Runs the three passes over one corpus file; an ASSERT ends only this file.
void CheckFile(const std::string& file, bool invalid_on_purpose, bool may_not_parse,
               Counts& counts) {
    const std::string text = ReadFile(kValid + "/" + file);
    auto parsed = ParseHloModule(text, file);
    if (!parsed.ok() && may_not_parse) {
      ++counts.unparsed_listed;
      return;
    }
    ASSERT_TRUE(parsed.ok()) << "the input does not parse (a parser problem, not one of these "
                                "passes): "
                             << parsed.status();
    std::unique_ptr<HloModule> module = *std::move(parsed);
    const bool verify = !invalid_on_purpose;
    if (verify) {
      ASSERT_TRUE(VerifyHloModule(*module).ok())
          << "the input does not verify (a verifier or parser problem, not one of these passes): "
          << VerifyHloModule(*module);
    }
    ++counts.files;

    // WalkPostOrderUntil visits exactly MakeInstructionPostOrder's order and
    // stops when asked.
    for (const HloComputation* c : module->computations()) {
      const std::vector<HloInstruction*> expected = c->MakeInstructionPostOrder();
      std::vector<const HloInstruction*> walked;
      WalkPostOrderUntil(*c, [&](const HloInstruction* i) {
        walked.push_back(i);
        return false;
      });
      ASSERT_EQ(walked, std::vector<const HloInstruction*>(expected.begin(), expected.end()))
          << c->name();
      const size_t stop_at = expected.size() / 2;
      size_t seen = 0;
      WalkPostOrderUntil(*c, [&](const HloInstruction* i) { return seen++ == stop_at; });
      EXPECT_EQ(seen, stop_at + 1);
    }

    // --- checker: read-only, always false.
    const std::string before = PrintHloModule(*module);
    CollectiveStreamIdChecker checker{PassOptions{}};
    auto checked = checker.Run(module.get());
    ASSERT_TRUE(checked.ok()) << checked.status();
    EXPECT_FALSE(*checked);
    EXPECT_EQ(PrintHloModule(*module), before);

    // --- injector: every typed collective gets "0" or "1".
    NeuronCollectiveStreamIdInjector injector{PassOptions{}};
    auto injected = injector.Run(module.get());
    ASSERT_TRUE(injected.ok()) << injected.status();
    const bool have_exemplar =
        injector.tp_exemplar().has_value() || injector.fsdp_exemplar().has_value();
    EXPECT_EQ(*injected, have_exemplar);
    for (const HloComputation* c : module->computations()) {
      for (const HloInstruction* i : c->instructions()) {
        const std::string* stream = i->frontend_attributes().Find("stream_id");
        if (!IsTypedCollective(*i)) continue;
        ASSERT_NE(stream, nullptr) << i->name() << " not stamped";
        ASSERT_TRUE(*stream == "0" || *stream == "1") << i->name() << ": " << *stream;
        ++counts.typed_stamped;
        if (*stream == "1") {
          const ReplicaGroups fsdp =
              injector.fsdp_exemplar().has_value() ? injector.fsdp_exemplar()->groups
                                                   : ReplicaGroups();
          EXPECT_TRUE(ReplicaGroupsEqual(ReplicaGroupsOrEmpty(*i), fsdp)) << i->name();
        }
      }
    }
    // After stamping the checker sees stream ids exactly when there is a
    // typed collective.
    bool any_typed = false;
    for (const HloComputation* c : module->computations()) {
      for (const HloInstruction* i : c->instructions()) any_typed |= IsTypedCollective(*i);
    }
    EXPECT_EQ(CollectiveStreamIdChecker::AnyCollectiveHasStreamId(*module), any_typed);
    if (verify) {
      ASSERT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
    }
    const std::string stamped_text = PrintHloModule(*module);

    // --- enforcer, default behaviour.
    NeuronUniqueChannelIdEnforcer enforcer{PassOptions{}};
    auto enforced = enforcer.Run(module.get());
    ASSERT_TRUE(enforced.ok()) << enforced.status();
    EXPECT_EQ(*enforced, !enforcer.renumbered().empty());
    {
      auto ids = CollectiveIds(*module, /*skip_send_recv=*/false);
      std::set<std::optional<int64_t>> unique(ids.begin(), ids.end());
      EXPECT_EQ(unique.size(), ids.size()) << "channel ids not unique after the enforcer";
    }
    bool split_pair = false;
    for (const HloComputation* c : module->computations()) {
      for (const HloInstruction* i : c->instructions()) {
        if (!IsSendOrRecv(i) || !HasDoneUser(i)) continue;
        for (const HloInstruction* user : i->users()) {
          if ((user->opcode() == HloOpcode::kSendDone || user->opcode() == HloOpcode::kRecvDone) &&
              user->channel_id() != i->channel_id()) {
            split_pair = true;
          }
        }
      }
    }
    int group_mode_warnings = 0;
    for (const std::string& w : enforcer.Warnings()) {
      group_mode_warnings += w.find("group mode changes") != std::string::npos;
    }
    counts.group_mode_warnings += group_mode_warnings;
    counts.ids_renumbered += static_cast<int>(enforcer.renumbered().size());
    counts.modules_renumbered += *enforced;
    const absl::Status after = VerifyHloModule(*module);
    if (!verify) {
      // Invalid input: nothing to say about the verifier afterwards.
    } else if (!after.ok() && !split_pair &&
               GroupModeHazardExplains(after, enforcer.Warnings())) {
      ++counts.group_mode_rejections;
    } else if (split_pair) {
      ++counts.send_recv_split;
      EXPECT_FALSE(after.ok()) << "the verifier accepted a send/recv split from its done op";
      EXPECT_NE(std::string(after.message()).find("channel_id"), std::string::npos) << after;
      EXPECT_FALSE(enforcer.Warnings().empty());
    } else {
      EXPECT_TRUE(after.ok()) << after;
    }

    // --- enforcer with skip-send-recv, on the stamped module.
    auto reparsed = ParseHloModule(stamped_text, file);
    ASSERT_TRUE(reparsed.ok()) << reparsed.status();
    std::unique_ptr<HloModule> skip_module = *std::move(reparsed);
    std::vector<std::optional<int64_t>> send_recv_before;
    for (const HloComputation* c : skip_module->computations()) {
      for (const HloInstruction* i : c->instructions()) {
        if (IsSendOrRecv(i)) send_recv_before.push_back(i->channel_id());
      }
    }
    PassOptions skip_options;
    skip_options.unique_channel_ids_skip_send_recv = true;
    NeuronUniqueChannelIdEnforcer skipping(skip_options);
    auto skip_result = skipping.Run(skip_module.get());
    ASSERT_TRUE(skip_result.ok()) << skip_result.status();
    std::vector<std::optional<int64_t>> send_recv_after;
    for (const HloComputation* c : skip_module->computations()) {
      for (const HloInstruction* i : c->instructions()) {
        if (IsSendOrRecv(i)) send_recv_after.push_back(i->channel_id());
      }
    }
    EXPECT_EQ(send_recv_after, send_recv_before);
    {
      auto ids = CollectiveIds(*skip_module, /*skip_send_recv=*/true);
      std::set<std::optional<int64_t>> unique(ids.begin(), ids.end());
      EXPECT_EQ(unique.size(), ids.size()) << "channel ids not unique (skip send/recv)";
    }
    for (const std::string& w : skipping.Warnings()) {
      EXPECT_EQ(w.find("renumbered from"), std::string::npos) << w;
    }
    if (verify) {
      const absl::Status skip_after = VerifyHloModule(*skip_module);
      EXPECT_TRUE(skip_after.ok() || GroupModeHazardExplains(skip_after, skipping.Warnings()))
          << skip_after;
    }
}

TEST(StreamChannelCorpusTest, AllThreePassesOverEveryCollectiveModule) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::vector<std::string> files = CollectiveFiles();
  ASSERT_GT(files.size(), 1000u) << "cannot read " << kValid << "/MANIFEST.tsv";
  const std::set<std::string> invalid = InvalidOnPurpose();
  const std::set<std::string> exceptions = RoundTripExceptions();
  Counts counts;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    CheckFile(file, invalid.contains(file), exceptions.contains(file), counts);
  }
  EXPECT_EQ(counts.files + counts.unparsed_listed, static_cast<int>(files.size()));
  std::cout << "stream/channel corpus: " << counts.files << " modules, " << counts.typed_stamped
            << " typed collectives stamped, " << counts.modules_renumbered
            << " modules with renumbered channel ids (" << counts.ids_renumbered << " ids), "
            << counts.send_recv_split << " with a send/recv pair split (verifier rejects), "
            << counts.group_mode_warnings << " group-mode warnings ("
            << counts.group_mode_rejections << " modules the verifier then rejects), "
            << counts.unparsed_listed
            << " files skipped as listed in tests/corpus/valid_roundtrip_exceptions.tsv or "
               "valid_rejected.tsv\n";
}

// The collective scan the pipeline's passes share (ScanCollectives) against
// a fresh sweep, over every collective module, before the pipeline and
// after each of its passes and dce, with the looped-einsum passes on (they
// add and remove instructions between the checker and the injector).
TEST(StreamChannelCorpusTest, KeptCollectiveScanIsAFreshSweepAfterEveryPass) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::vector<std::string> files = CollectiveFiles();
  ASSERT_GT(files.size(), 1000u) << "cannot read " << kValid << "/MANIFEST.tsv";
  int modules = 0, compared = 0, reused = 0, after_removals = 0;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    auto parsed = ParseHloModule(ReadFile(kValid + "/" + file), file);
    if (!parsed.ok()) continue;
    HloModule* module = parsed->get();
    ++modules;
    PassOptions options;
    options.collective_matmul_nxd = true;
    options.collective_permute_aggressive = true;
    HloPassPipeline pipeline;
    ASSERT_TRUE(BuildNeuronCollectivePipeline(options, &pipeline).ok());
    pipeline.AddPass(std::make_unique<HloDCE>());
    pipeline.set_verification(HloPassPipeline::Verification::kNone);
    std::shared_ptr<const CollectiveScan> last;
    uint64_t generation = module->channel_generation(), removals = module->channel_removals();
    auto check = [&](absl::string_view after) {
      // Channel instructions removed, none added: the kept scan is filtered.
      if (module->channel_generation() == generation && module->channel_removals() != removals) {
        ++after_removals;
      }
      generation = module->channel_generation();
      removals = module->channel_removals();
      const std::shared_ptr<const CollectiveScan> kept = ScanCollectives(*module);
      const CollectiveScan fresh = SweepCollectives(*module);
      EXPECT_EQ(kept->channel, fresh.channel) << "after " << after;
      EXPECT_EQ(kept->typed, fresh.typed) << "after " << after;
      EXPECT_EQ(kept->typed_begin, fresh.typed_begin) << "after " << after;
      ++compared;
      if (kept == last) ++reused;
      last = kept;
    };
    check("parsing");
    pipeline.set_observer([&](const HloPassInterface& pass, const nlohmann::json&) {
      check(pass.name());
    });
    ASSERT_TRUE(pipeline.Run(module).ok());
  }
  EXPECT_GT(modules, 1000);
  // The kept route is taken (most passes add or remove no collective), so
  // the comparisons above test it.
  EXPECT_GT(reused, compared / 2);
  EXPECT_GT(after_removals, 0);
  std::cout << "collective scan: " << modules << " modules, " << compared
            << " comparisons with a fresh sweep, " << reused << " of them on a kept scan, "
            << after_removals << " on a kept scan less removed channel instructions\n";
}

}  // namespace
}  // namespace hilo
