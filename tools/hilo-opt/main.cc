// hilo-opt: runs HLO passes on an HLO text module, like XLA's hlo-opt.
//
//   hilo-opt [INPUT|-] [-o OUTPUT] [--passes=a,b,...] [--list-passes]
//            [--split-input-file] [--no-verify] [--report=FILE|-]
//            [--explain[=PASSES]] [-q] [pass flags]
//
// Exit status: 0 success, 1 bad input (unreadable, unparsable or invalid
// module, unknown pass, bad flag, a pass rejecting the module, an output
// that cannot be written), 2 internal error (a pass failing on its own or
// leaving an invalid module behind), 3 --check-equivalence found the module
// after the passes not equivalent, 4 --check-equivalence could not decide
// (UNDECIDED: a limit, the time budget, an unsupported opcode;
// --allow-undecided writes the module anyway) (docs/tools.md). Nothing is
// written to stdout, -o or --report unless every part of the input went
// through. See docs/hilo-opt.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <unistd.h>

#include "CLI/CLI.hpp"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/file_io.h"
#include "common/malloc_tunables.h"
#include "common/tool_cli.h"
#include "pass_messages.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/eval/equivalence.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/hlo_pass_pipeline.h"
#include "hilo/pass/pass_options.h"
#include "hilo/pass/pass_registry.h"
#include "hilo/passes/register_passes.h"
#include "hilo/proto/module_file.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "hilo/text/source_location.h"
#include "nlohmann/json.hpp"

namespace hilo {
namespace {

constexpr char kTool[] = "hilo-opt";
using tool::ExitCodeFor;
using tool::kExitBadInput;
using tool::kExitInternal;
using tool::kExitNotEquivalent;  // --check-equivalence found a difference
using tool::kExitOk;
using tool::kExitUndecided;  // --check-equivalence reached no verdict

// While a round trip verifies the module, up to this much printed text is
// held back for standard output or a device (see PrintGated); then the
// printer waits for the verification.
constexpr size_t kDefaultHoldBackBytes = size_t{8} << 20;

struct DriverOptions {
  std::string input = "-";
  std::string output = "-";
  std::string passes;
  bool list_passes = false;
  bool split_input_file = false;
  bool no_verify = false;
  // Verify after every pass instead of once after the last, to name the
  // pass that broke the module (--no-verify wins).
  bool verify_each = false;
  // How much printed text a round trip holds back while the module is being
  // verified (see PrintGated). A hidden option, for tests.
  size_t hold_back_bytes = kDefaultHoldBackBytes;
  bool explain = false;
  // --explain=a,b: explain only these passes (registered names; empty: all).
  absl::flat_hash_set<std::string> explain_only;
  // -q: no per-pass summary lines, no warnings.
  bool quiet = false;
  std::string report;  // "-": standard output
  PassOptions pass_options;
  // --- Equivalence checking (issue 6) -----------------------------------
  // `--check-equivalence [--devices=N] [--seed=S] [--rtol=..] [--atol=..]`
  // options go here; see ProcessPart for where the check runs.
  bool check_equivalence = false;
  bool allow_undecided = false;
  double check_time_budget = 60;
  int64_t max_memory_mib = eval::InterpreterOptions::kDefaultMaxMemoryBytes >> 20;
  eval::EquivalenceOptions equivalence;
  // --- Proto formats (docs/proto-format.md) -----------------------------
  std::string emit;  // "", "hlo", "pb" or "pbtxt"
  std::optional<int64_t> replica_count;
  std::optional<int64_t> num_partitions;
};

// One module of the input: the whole input, or one `// -----` part of it.
struct InputPart {
  absl::string_view text;  // points into the input buffer
  int64_t first_line = 1;  // 1-based line of `text`'s first line in the input
  int64_t index = 0;
};

// A line that is exactly `// -----` (trailing blanks and a CR allowed).
bool IsSplitMarker(absl::string_view line) {
  return absl::StripTrailingAsciiWhitespace(line) == "// -----";
}

// True if every line is blank or a `//` comment: a part like that (after a
// trailing `// -----`, or holding only notes) is skipped, not an error.
bool IsBlankPart(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && !absl::StartsWith(line, "//")) return false;
  }
  return true;
}

std::vector<InputPart> SplitInput(absl::string_view text, bool split) {
  std::vector<InputPart> parts;
  if (!split) {
    parts.push_back(InputPart{text, 1, 0});
    return parts;
  }
  size_t part_begin = 0;
  int64_t part_first_line = 1;
  int64_t line_number = 1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    size_t next = end == absl::string_view::npos ? text.size() : end + 1;
    absl::string_view line = text.substr(pos, (end == absl::string_view::npos ? text.size() : end) - pos);
    if (IsSplitMarker(line)) {
      parts.push_back(InputPart{text.substr(part_begin, pos - part_begin), part_first_line,
                                static_cast<int64_t>(parts.size())});
      part_begin = next;
      part_first_line = line_number + 1;
    }
    pos = next;
    ++line_number;
  }
  parts.push_back(InputPart{text.substr(part_begin), part_first_line,
                            static_cast<int64_t>(parts.size())});
  return parts;
}

// The parser numbers lines from the start of the text it was given; a part
// of a split input starts at `first_line` of the file. Rewrites the leading
// `<display>:<line>:` of a parse error to the file's line.
std::string ShiftErrorLine(absl::string_view message, absl::string_view display,
                           int64_t first_line) {
  if (first_line == 1) return std::string(message);
  const std::optional<ErrorLocation> at = ParseErrorLocation(message, display);
  if (!at.has_value()) return std::string(message);
  const size_t first_line_end = std::min(message.find('\n'), message.size());
  return absl::StrCat(display, ":", at->line + first_line - 1, ":", at->column, ": error: ",
                      at->message, message.substr(first_line_end));
}

// Verifies one module on a second thread. The thread is started before the
// module exists (while the input is parsed) and waits for it: starting a
// thread once the module is parsed cost 1.3-2.9 ms on a 2-core VM, a
// twentieth of a 4 MB module's round trip.
class BackgroundVerifier {
 public:
  BackgroundVerifier() = default;
  BackgroundVerifier(const BackgroundVerifier&) = delete;
  BackgroundVerifier& operator=(const BackgroundVerifier&) = delete;
  // A thread that never got a module ends without verifying anything.
  ~BackgroundVerifier() {
    if (result_.valid() && !has_module_) module_.set_value(nullptr);
  }

  // False if no thread could be started (then verify on this thread).
  bool Start() {
    try {
      result_ = std::async(std::launch::async, [module = module_.get_future()]() mutable {
        const HloModule* to_verify = module.get();
        return to_verify == nullptr ? absl::OkStatus() : VerifyHloModule(*to_verify);
      });
    } catch (const std::system_error&) {
      return false;
    }
    return true;
  }
  // Hands the module over (once, after Start()); it must stay alive until
  // Wait() returned or this object is destroyed.
  void Verify(const HloModule* module) {
    has_module_ = true;
    module_.set_value(module);
  }
  bool has_module() const { return has_module_; }
  // The verification's result (once).
  absl::Status Wait() { return result_.get(); }

 private:
  std::promise<const HloModule*> module_;
  bool has_module_ = false;
  // Last: destroyed first, which waits for the thread (that uses the above).
  std::future<absl::Status> result_;
};

class Driver {
 public:
  Driver(const DriverOptions& options, const PassRegistry& registry,
         std::vector<std::string> pass_names)
      : options_(options), registry_(registry), pass_names_(std::move(pass_names)) {}

  // Runs every part; returns the exit status.
  int Run() {
    display_ = options_.input == "-" ? "<stdin>" : options_.input;
    tool::AnnounceStdinRead(kTool, options_.input);
    absl::StatusOr<InputBuffer> input = ReadInput(options_.input);
    if (!input.ok()) {
      tool::PrintError(kTool, input.status().message());
      return kExitBadInput;
    }
    input_ = *std::move(input);
    if (int code = ChooseFormats(); code != kExitOk) return code;

    std::vector<InputPart> parts = SplitInput(input_.text(), options_.split_input_file);
    split_ = parts.size() > 1;
    // A plain round trip (one module, no passes, no report or equivalence
    // check) verifies on a second thread while the module is printed, and
    // nothing printed is seen before the verification passed (PrintGated).
    // With passes, the passes need a verified module first.
    verify_while_printing_ = !options_.no_verify && !split_ && pass_names_.empty() &&
                             options_.report.empty() && !options_.check_equivalence &&
                             output_format_ == ModuleFormat::kText;
    // HILO_VERIFY_THREAD=0 verifies first, on this thread (to measure the
    // thread's gain: docs/performance.md).
    if (EnvSwitchIsZero("HILO_VERIFY_THREAD")) verify_while_printing_ = false;
    if (verify_while_printing_) verify_while_printing_ = verifier_.Start();
    int exit_code = kExitOk;
    // The modules are printed once every part went through (nothing is
    // written otherwise), straight to the output: no copy of the text.
    std::vector<std::unique_ptr<HloModule>> modules;
    absl::Cleanup retire = [&modules] {
      for (std::unique_ptr<HloModule>& module : modules) RetireModule(std::move(module));
    };
    for (const InputPart& part : parts) {
      if (split_ && IsBlankPart(part.text)) continue;
      std::unique_ptr<HloModule> module;
      int code = ProcessPart(part, &module);
      if (code != kExitOk) {
        exit_code = std::max(exit_code, code);
        continue;  // later parts still get their diagnostics
      }
      modules.push_back(std::move(module));
    }
    part_ = nullptr;
    if (exit_code != kExitOk) return exit_code;

    if (!options_.report.empty()) {
      nlohmann::json report = nlohmann::json::object();
      report["passes"] = std::move(report_entries_);
      std::string text =
          report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      absl::Status status = options_.report == "-" ? WriteStdout(text)
                                                   : WriteFileAtomically(options_.report, text);
      if (!status.ok()) return tool::Fail(kTool, status);
    }
    if (verifier_.has_module()) return PrintGated(modules, parts.front());
    if (output_format_ != ModuleFormat::kText) return WriteProto(modules);
    absl::Status status = options_.output == "-" ? PrintToStdout(modules)
                                                 : PrintToFile(modules, options_.output);
    if (!status.ok()) return tool::Fail(kTool, status);
    return kExitOk;
  }

 private:
  // The input's format (by content and name) and the output's: --emit, else
  // the output file's extension, else the input's. A binary proto is not
  // written to a terminal unless --emit=pb asks for it.
  int ChooseFormats() {
    input_format_ = DetectModuleFormat(input_.text(), display_);
    output_format_ = input_format_;
    if (!options_.emit.empty()) {
      std::optional<ModuleFormat> f = ModuleFormatFromName(options_.emit);
      if (!f.has_value()) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--emit must be hlo, pb or pbtxt, not '",
                                                            options_.emit, "'")),
                    kExitBadInput);
      }
      output_format_ = *f;
    } else if (options_.output != "-") {
      output_format_ = ModuleFormatFromPath(options_.output).value_or(input_format_);
    }
    if (input_format_ != ModuleFormat::kText && options_.split_input_file) {
      return Fail(absl::InvalidArgumentError("--split-input-file takes HLO text, not a proto"),
                  kExitBadInput);
    }
    if (output_format_ != ModuleFormat::kText && options_.split_input_file) {
      return Fail(absl::InvalidArgumentError(
                      "--split-input-file writes HLO text: a proto holds one module"),
                  kExitBadInput);
    }
    if (output_format_ == ModuleFormat::kProto && options_.output == "-" && options_.emit != "pb" &&
        isatty(STDOUT_FILENO)) {
      return Fail(absl::InvalidArgumentError(
                      "not writing a binary proto to a terminal: give -o FILE, redirect the "
                      "output, or --emit=pb (or --emit=hlo / pbtxt for text)"),
                  kExitBadInput);
    }
    return kExitOk;
  }

  // The module of one part, in the input's format; --replica-count and
  // --num-partitions applied.
  absl::StatusOr<std::unique_ptr<HloModule>> ReadPart(const InputPart& part) {
    absl::StatusOr<std::unique_ptr<HloModule>> module;
    // The input's pages the parse (or a binary proto's decoding) is done
    // with leave memory as it goes (InputBuffer::DropPagesBefore);
    // HILO_DROP_INPUT=0 keeps them.
    std::function<void(size_t)> done_before, done_from;
    if (!EnvSwitchIsZero("HILO_DROP_INPUT")) {
      const size_t part_offset = static_cast<size_t>(part.text.data() - input_.text().data());
      done_before = [this, part_offset](size_t offset) {
        input_.DropPagesBefore(part_offset + offset);
      };
      done_from = [this, part_offset](size_t offset) { input_.DropPagesFrom(part_offset + offset); };
    }
    if (input_format_ == ModuleFormat::kText) {
      module = ParseTextModule(part.text, display_, done_before);
    } else {
      absl::StatusOr<LoadedModule> loaded =
          LoadModule(part.text, display_, input_format_ == ModuleFormat::kProto ? done_before : nullptr,
                     input_format_ == ModuleFormat::kProto ? done_from : nullptr);
      if (!loaded.ok()) return loaded.status();
      proto_message_ = loaded->message;
      proto_envelope_ = std::move(loaded->envelope);
      module = std::move(loaded->module);
      // The module holds copies of what it needs from a proto, and nothing
      // reads a proto's bytes again unless the equivalence check re-reads
      // them: the mapped input leaves the peak memory (34 MB of the 300k
      // module's round trip; docs/performance.md, "Proto formats").
      if (!options_.check_equivalence) input_ = InputBuffer();
    }
    if (module.ok()) {
      if (options_.replica_count.has_value()) (*module)->set_replica_count(options_.replica_count);
      if (options_.num_partitions.has_value()) (*module)->set_num_partitions(options_.num_partitions);
    }
    return module;
  }

  // Writes the one module as a proto (binary or text), atomically.
  int WriteProto(const std::vector<std::unique_ptr<HloModule>>& modules) {
    if (modules.size() != 1) {
      return Fail(absl::InvalidArgumentError("a proto holds one module"), kExitBadInput);
    }
    // A binary proto to a file is streamed to its temporary file (about a
    // megabyte in memory at once: the output's 34 MB left the 300k module's
    // peak; docs/performance.md, "Proto formats"). HILO_PROTO_STREAM=0
    // writes it whole in memory first, as is done for standard output and
    // devices (nothing may be seen there before it is complete).
    if (output_format_ == ModuleFormat::kProto && options_.output != "-" &&
        AtomicFileWriter::HidesWritesUntilCommit(options_.output) && !EnvSwitchIsZero("HILO_PROTO_STREAM")) {
      AtomicFileWriter file;
      absl::Status status = file.Open(options_.output);
      if (status.ok() && file.temporary_fd() >= 0) {
        WireWriter out(file.temporary_fd(), options_.output);
        status = WriteBinaryModule(*modules.front(), proto_message_, proto_envelope_, &out);
        if (status.ok()) status = file.Commit();
        if (!status.ok()) return Fail(status, ExitCodeFor(status));
        return kExitOk;
      }
      if (!status.ok()) return Fail(status, ExitCodeFor(status));
    }
    absl::StatusOr<std::string> bytes =
        SerializeModule(*modules.front(), output_format_, proto_message_, proto_envelope_);
    if (!bytes.ok()) return Fail(bytes.status(), ExitCodeFor(bytes.status()));
    absl::Status status = options_.output == "-" ? WriteStdout(*bytes)
                                                 : WriteFileAtomically(options_.output, *bytes);
    if (!status.ok()) return Fail(status, ExitCodeFor(status));
    return kExitOk;
  }

  // Forwards the printer's output to a function (a file or stdout writer).
  template <typename WriteFn>
  class ForwardingSink final : public OutputSink {
   public:
    explicit ForwardingSink(WriteFn write) : write_(std::move(write)) {}
    absl::Status Write(absl::string_view text) override { return write_(text); }

   private:
    WriteFn write_;
  };

  // Prints the modules, `// -----` between two, to `sink`, as they were
  // given (one module: just its text).
  static absl::Status PrintModules(const std::vector<std::unique_ptr<HloModule>>& modules,
                                   OutputSink& sink) {
    for (size_t i = 0; i < modules.size(); ++i) {
      if (i > 0) {
        absl::Status status = sink.Write("// -----\n");
        if (!status.ok()) return status;
      }
      // The printed text ends with a newline, as each part's must.
      absl::Status status = PrintHloModule(*modules[i], sink);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  // Passes text on once `gate` returned OK, and until then keeps up to
  // `limit` bytes of it in memory (then the printer waits for the gate; with
  // the default limit only a module printed longer than its input does).
  // The gate also opens the output, so nothing of it is touched (not even a
  // device opened) for a module that fails verification.
  class GatedSink final : public OutputSink {
   public:
    // `expected_bytes`: about how much text will come (one allocation).
    GatedSink(size_t limit, size_t expected_bytes, std::function<absl::Status()> gate,
              std::function<absl::Status(absl::string_view)> write)
        : limit_(limit),
          expected_bytes_(expected_bytes),
          gate_(std::move(gate)),
          write_(std::move(write)) {}

    absl::Status Write(absl::string_view text) override {
      if (!open_) {
        if (held_.size() + text.size() <= limit_) {
          if (held_.empty()) held_.reserve(std::min(limit_, expected_bytes_));
          held_.append(text.data(), text.size());
          return absl::OkStatus();
        }
        absl::Status opened = Open();
        if (!opened.ok()) return opened;
      }
      return write_(text);
    }

    // Waits for the gate, then writes what was held back.
    absl::Status Open() {
      if (open_) return absl::OkStatus();
      absl::Status status = gate_();
      if (!status.ok()) return status;
      open_ = true;
      if (!held_.empty()) status = write_(held_);
      std::string().swap(held_);
      return status;
    }

   private:
    size_t limit_;
    size_t expected_bytes_;
    std::function<absl::Status()> gate_;
    std::function<absl::Status(absl::string_view)> write_;
    std::string held_;
    bool open_ = false;
  };

  // Prints the one module while verifier_ checks it; nothing printed is
  // seen unless the module is valid. An invalid module fails exactly as when
  // it is verified before printing (same message, same exit status, output
  // untouched).
  // - An output where nothing is seen before the end anyway (a regular file,
  //   written to a temporary file renamed at the end; the null device) is
  //   written while printing, and committed once the module is known valid.
  // - Standard output and other devices get the text only once the module
  //   is known valid: until then it is held back, up to --hold-back-bytes
  //   (then the printer waits), and the output is not even opened.
  // `part` is the input the module was parsed from.
  int PrintGated(const std::vector<std::unique_ptr<HloModule>>& modules, const InputPart& part) {
    std::optional<absl::Status> verified;
    auto wait_for_verification = [&]() -> const absl::Status& {
      if (!verified.has_value()) verified = verifier_.Wait();
      return *verified;
    };
    AtomicFileWriter file;
    const bool to_stdout = options_.output == "-";
    absl::Status status;
    if (!to_stdout && AtomicFileWriter::HidesWritesUntilCommit(options_.output)) {
      status = file.Open(options_.output);
      if (status.ok()) {
        ForwardingSink sink([&file](absl::string_view text) { return file.Write(text); });
        status = PrintModules(modules, sink);
      }
    } else {
      // The printed text is about as long as the input (a little longer when
      // the printer adds what the input left implicit).
      GatedSink sink(
          options_.hold_back_bytes, input_.text().size() + input_.text().size() / 8 + 4096,
          [&]() -> absl::Status {
            if (!wait_for_verification().ok()) return *verified;
            return to_stdout ? absl::OkStatus() : file.Open(options_.output);
          },
          [&](absl::string_view text) { return to_stdout ? WriteStdout(text) : file.Write(text); });
      status = PrintModules(modules, sink);
      if (status.ok()) status = sink.Open();
    }
    // Also when printing failed first: an invalid module is reported as such.
    if (!wait_for_verification().ok()) return FailInvalidInput(*verified, part);
    if (status.ok() && !to_stdout) status = file.Commit();
    if (!status.ok()) return tool::Fail(kTool, status);
    return kExitOk;
  }

  static absl::Status PrintToStdout(const std::vector<std::unique_ptr<HloModule>>& modules) {
    ForwardingSink sink([](absl::string_view text) { return WriteStdout(text); });
    return PrintModules(modules, sink);
  }

  // Streams the text into a temporary file renamed over `path` at the end:
  // on any error `path` is untouched and the temporary file removed.
  static absl::Status PrintToFile(const std::vector<std::unique_ptr<HloModule>>& modules,
                                  const std::string& path) {
    AtomicFileWriter file;
    absl::Status status = file.Open(path);
    if (!status.ok()) return status;
    ForwardingSink sink([&file](absl::string_view text) { return file.Write(text); });
    status = PrintModules(modules, sink);
    if (!status.ok()) return status;
    return file.Commit();
  }

  // Parses, verifies and transforms one part into `*result`; returns the
  // exit status.
  int ProcessPart(const InputPart& part, std::unique_ptr<HloModule>* result) {
    part_ = &part;
    absl::StatusOr<std::unique_ptr<HloModule>> parsed = ReadPart(part);
    if (!parsed.ok()) {
      // The parser's message already reads `file:line:col: error: ...`.
      std::string message = ShiftErrorLine(parsed.status().message(), display_, part.first_line);
      std::fprintf(stderr, "%s\n", message.c_str());
      return ExitCodeFor(parsed.status()) == kExitInternal ? kExitInternal : kExitBadInput;
    }
    std::unique_ptr<HloModule> module = *std::move(parsed);

    if (!verify_while_printing_ && !options_.no_verify) {
      absl::Status verified = VerifyHloModule(*module);
      if (!verified.ok()) return FailInvalidInput(verified, part);
    }

    absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
        registry_.BuildPipeline(pass_names_, options_.pass_options);
    if (!pipeline.ok()) return Fail(pipeline.status(), ExitCodeFor(pipeline.status()));
    (*pipeline)->set_verification(options_.no_verify     ? HloPassPipeline::Verification::kNone
                                  : options_.verify_each ? HloPassPipeline::Verification::kEachPass
                                                         : HloPassPipeline::Verification::kAtEnd);
    // Pass details only go to --report; the summary lines come from the
    // entries' "change_summary", explanations are printed by the observer
    // below straight from each pass.
    (*pipeline)->set_collect_report_details(!options_.report.empty());
    (*pipeline)->set_collect_explanations(false);
    const std::string module_name = module->name();
    // With several parts, say which module a summary line is about.
    const std::string about = split_ ? absl::StrCat(" (module ", module_name, ")") : "";
    bool any_changed = false;
    (*pipeline)->set_observer([&](const HloPassInterface& pass, const nlohmann::json& entry) {
      const std::string pass_name(pass.name());
      if (!options_.quiet) {
        for (const std::string& warning : pass.Warnings()) {
          tool::PrintWarning(kTool, absl::StrCat(pass_name, ": ", warning));
        }
      }
      std::optional<std::string> line = PassSummaryLine(entry);
      if (line.has_value() && !options_.quiet) {
        std::fprintf(stderr, "%s: %s%s\n", kTool, line->c_str(), about.c_str());
      }
      any_changed |= line.has_value() || entry.value("changed", false);
      if (options_.explain &&
          (options_.explain_only.empty() || options_.explain_only.contains(pass_name))) {
        // The pipeline marks a pass its run condition skipped with a string.
        auto skipped = entry.find("skipped");
        if (skipped != entry.end() && skipped->is_string()) {
          std::fprintf(stderr, "explain: %s: skipped: %s\n", pass_name.c_str(),
                       skipped->get<std::string>().c_str());
        } else {
          for (const std::string& line : GroupExplanations(pass.Explanations())) {
            std::fprintf(stderr, "explain: %s: %s\n", pass_name.c_str(), line.c_str());
          }
        }
      }
      nlohmann::json with_module = entry;
      with_module["module"] = module_name;
      report_entries_.push_back(std::move(with_module));
    });
    absl::StatusOr<bool> changed = (*pipeline)->Run(module.get());
    if (!changed.ok()) return Fail(changed.status(), ExitCodeFor(changed.status()));
    if (!options_.quiet && !any_changed && (*pipeline)->pass_count() > 0) {
      std::fprintf(stderr, "%s: no pass changed the module%s\n", kTool, about.c_str());
    }

    // --- Equivalence checking (issue 6) -----------------------------------
    // `part.text` is this part's original input, untouched by the passes:
    // re-parse it for the "before" run and compare it with `*module` here,
    // before printing; a mismatch returns its exit status like any failure.
    if (options_.check_equivalence) {
      absl::StatusOr<std::unique_ptr<HloModule>> before = ReadPart(part);
      if (!before.ok()) return Fail(before.status(), kExitInternal);
      absl::StatusOr<eval::EquivalenceReport> report =
          eval::CheckEquivalence(**before, *module, options_.equivalence);
      if (!report.ok()) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--check-equivalence: ",
                                                            report.status().message())),
                    kExitBadInput);
      }
      std::fputs(report->ToString().c_str(), stderr);
      if (report->verdict == eval::Verdict::kUndecided) {
        if (!options_.allow_undecided) {
          return Fail(absl::FailedPreconditionError(
                          "--check-equivalence: undecided (--allow-undecided writes the module anyway)"),
                      kExitUndecided);
        }
        std::fprintf(stderr, "%s: warning: --check-equivalence undecided; writing the module unchecked\n",
                     display_.c_str());
      } else if (!options_.quiet) {
        std::fprintf(stderr, "%s: %s\n", kTool, EquivalenceNote(*report).c_str());
      }
      if (report->verdict == eval::Verdict::kNotEquivalent) {
        return Fail(absl::FailedPreconditionError(
                        "--check-equivalence: the module after the passes is not equivalent"),
                    kExitNotEquivalent);
      }
    }

    // Handed over last: the module outlives the verification (kept until the
    // process ends, RetireModule) once it is in *result.
    if (verify_while_printing_) verifier_.Verify(module.get());
    *result = std::move(module);
    return kExitOk;
  }

  // The process is about to end: tearing a large module down instruction by
  // instruction would cost more than a tenth of the run (measured with perf
  // on a 300,000-instruction module) for memory the OS takes back anyway. A
  // finished module is kept reachable from a global instead, so leak checkers
  // do not report it.
  static void RetireModule(std::unique_ptr<HloModule> module) {
    static auto* const retired = new std::vector<std::unique_ptr<HloModule>>();
    retired->push_back(std::move(module));
  }

  // An input module the verifier rejects: `file:line:col: error: input
  // module is invalid: ...`, the line and a caret, pointing at the
  // instruction (or computation) the verifier names where the part's text
  // defines it; without a position when it is not found there.
  int FailInvalidInput(const absl::Status& verified, const InputPart& part) {
    const std::string message = absl::StrCat("input module is invalid: ", verified.message());
    std::optional<size_t> offset;
    // A proto has no lines to point at.
    std::optional<VerifierLocation> location = GetVerifierLocation(verified);
    if (location.has_value() && input_format_ == ModuleFormat::kText) {
      offset = FindDefinition(part.text, location->computation, location->instruction);
    }
    if (!offset.has_value()) return Fail(absl::InvalidArgumentError(message), kExitBadInput);
    const std::string error = ShiftErrorLine(FormatErrorAt(display_, part.text, *offset, message),
                                             display_, part.first_line);
    std::fprintf(stderr, "%s\n", error.c_str());
    return kExitBadInput;
  }

  // Prints `status` as `<file>: error: ...` and returns `code`.
  int Fail(const absl::Status& status, int code) {
    std::string where = display_;
    std::string suffix;
    if (split_ && part_ != nullptr) {
      suffix = absl::StrCat(" (in the input part starting at line ", part_->first_line, ")");
    }
    std::fprintf(stderr, "%s: error: %s%s\n", where.c_str(), std::string(status.message()).c_str(),
                 suffix.c_str());
    return code;
  }

  const DriverOptions& options_;
  ModuleFormat input_format_ = ModuleFormat::kText;
  ModuleFormat output_format_ = ModuleFormat::kText;
  // The proto message the input was (an output proto is the same message).
  ProtoMessage proto_message_ = ProtoMessage::kHloModuleProto;
  std::string proto_envelope_;
  const PassRegistry& registry_;
  const std::vector<std::string> pass_names_;
  std::string display_;
  InputBuffer input_;
  bool split_ = false;
  bool verify_while_printing_ = false;
  // The verification running beside the printing, when verify_while_printing_.
  BackgroundVerifier verifier_;
  const InputPart* part_ = nullptr;
  nlohmann::json report_entries_ = nlohmann::json::array();
};

std::vector<std::string> ParsePassList(absl::string_view list) {
  std::vector<std::string> names;
  for (absl::string_view name : absl::StrSplit(list, ',')) {
    name = absl::StripAsciiWhitespace(name);
    if (!name.empty()) names.emplace_back(name);
  }
  return names;
}

void ListPasses(const PassRegistry& registry) {
  std::printf("Passes (`-` and `_` in a name are interchangeable):\n");
  size_t width = 0;
  for (const std::string& name : registry.PassNames()) width = std::max(width, name.size());
  for (const std::string& name : registry.PassNames()) {
    std::string description = registry.PassDescription(name);
    if (description.empty()) {
      std::printf("  %s\n", name.c_str());
    } else {
      std::printf("  %-*s  %s\n", static_cast<int>(width), name.c_str(), description.c_str());
    }
  }
  std::vector<std::string> pipelines = registry.PipelineNames();
  if (!pipelines.empty()) {
    std::printf("Pipelines:\n");
    for (const std::string& name : pipelines) {
      std::printf("  %s = %s\n", name.c_str(), registry.PipelineDescription(name).c_str());
    }
  }
}

// The registered names of the passes `list` ("a,b", passes or pipelines)
// stands for, `-` and `_` alike; an unknown name is an error.
absl::StatusOr<absl::flat_hash_set<std::string>> PassesNamed(const PassRegistry& registry,
                                                             absl::string_view list,
                                                             const PassOptions& pass_options) {
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
      registry.BuildPipeline(ParsePassList(list), pass_options);
  if (!pipeline.ok()) return pipeline.status();
  absl::flat_hash_set<std::string> names;
  for (int64_t i = 0; i < (*pipeline)->pass_count(); ++i) {
    names.insert(std::string((*pipeline)->pass(i)->name()));
  }
  return names;
}

// -o and --report: folders that exist, not the same file, and at most one
// of them on standard output.
absl::Status CheckOutputs(const DriverOptions& options) {
  if (absl::Status status = CheckOutputPath(options.output); !status.ok()) return status;
  if (options.report.empty()) return absl::OkStatus();
  if (absl::Status status = CheckOutputPath(options.report); !status.ok()) return status;
  if (options.report == "-" && options.output == "-") {
    return absl::InvalidArgumentError(
        "--report=- writes the report to standard output, where the module goes too: "
        "give the module a file with -o FILE (or -o /dev/null)");
  }
  if (SameOutputFile(options.output, options.report)) {
    return absl::InvalidArgumentError(absl::StrCat("-o and --report name the same file '",
                                                   options.report, "'"));
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  DriverOptions options;
  CLI::App app{"hilo-opt: run HLO passes on an HLO text module"};
  tool::SetUpApp(app, kTool);
  app.add_option("input", options.input,
                 "input module (HLO text, or XLA's HloModuleProto / HloProto / HloSnapshot, "
                 "binary or text proto), or - for stdin");
  app.add_option("--emit", options.emit,
                 "output format: hlo, pb or pbtxt (default: -o's extension, else the input's)");
  app.add_option("--replica-count", options.replica_count,
                 "the module's replica count (XLA's protos do not hold it)");
  app.add_option("--num-partitions", options.num_partitions,
                 "the module's number of partitions (XLA's protos do not hold it)");
  app.add_option("-o,--output", options.output, "output file (- is stdout), written atomically");
  app.add_option("--passes", options.passes,
                 "comma-separated passes and pipelines to run, in order");
  app.add_flag("--list-passes", options.list_passes, "list the passes and pipelines, then exit");
  app.add_flag("--split-input-file", options.split_input_file,
               "process each `// -----` separated part as its own module");
  app.add_flag("--no-verify", options.no_verify,
               "do not verify the input, nor the module after each pass");
  app.add_flag("--verify-each", options.verify_each,
               "verify after every pass, not once after the last, to name the pass that broke "
               "the module");
  app.add_option("--report", options.report,
                 "write a JSON report of the passes run to FILE (- for stdout, with -o FILE)");
  app.add_option("--hold-back-bytes", options.hold_back_bytes)->group("");  // tests only
  // A flag, so that `--explain INPUT` does not take INPUT as its value.
  std::string explain = "";
  app.add_flag("--explain{all}", explain,
               "print why each pass did what it did on stderr; --explain=PASS,... only for "
               "those passes (or pipelines)")
      ->option_text("[=PASS,...]");
  app.add_flag("-q,--quiet", options.quiet,
               "print no per-pass summary lines and no warnings on stderr (errors still)");

  bool nxd = false, aggressive = false;
  int64_t sb_threshold_mb = 0;
  CLI::Option* nxd_flag = app.add_flag(
      "--collective-matmul-nxd", nxd,
      "as NEURON_COLLECTIVE_MATMUL_NXD=1 (=false to override the variable)");
  CLI::Option* aggressive_flag = app.add_flag(
      "--collective-permute-aggressive", aggressive,
      "as NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE=1 (=false to override the variable)");
  CLI::Option* sb_flag = app.add_option(
      "--sb-to-sb-threshold-mb", sb_threshold_mb,
      "as NEURON_COLLECTIVE_MATMUL_SB_TO_SB_THRESHOLD_IN_MB=N (default: the variable, else 16)");
  sb_flag->default_str("");
  app.add_flag("--collective-matmul-strict", options.pass_options.collective_matmul_strict,
               "refuse collective-matmul folds that are not exact under the kernel's contract");
  app.add_flag("--weight-chain-copy-bitcast", options.pass_options.weight_chain_copy_bitcast,
               "WeightInLHS/RHS also walk bitcast and copy (beyond the original)");
  app.add_flag("--unique-channel-ids-skip-send-recv",
               options.pass_options.unique_channel_ids_skip_send_recv,
               "the unique channel id enforcer leaves send/recv alone");
  app.add_flag("--force-stream-id-injection", options.pass_options.force_stream_id_injection,
               "in neuron-collective-pipeline, inject stream ids even if some are present");
  // --- Equivalence checking (issue 6): its flags are added here. ----------
  app.add_flag("--check-equivalence", options.check_equivalence,
               "run the module before and after the passes on simulated devices and compare "
               "every output (docs/interpreter.md); exit 3 on a mismatch");
  app.add_option("--devices", options.equivalence.interpreter.devices,
                 "--check-equivalence: number of devices (default: the module header)");
  tool::AddSeedOption(app, &options.equivalence.interpreter.seed,
                      "--check-equivalence: seed of the random inputs");
  app.add_option("--rtol", options.equivalence.rtol,
                 "--check-equivalence: relative tolerance (default: by element type)");
  app.add_option("--atol", options.equivalence.atol,
                 "--check-equivalence: absolute tolerance (default: by element type)");
  app.add_option("--check-time-budget", options.check_time_budget,
                 "--check-equivalence: seconds for both runs; past it the verdict is UNDECIDED "
                 "(exit 4); 0 = no limit (default 60)");
  app.add_flag("--check-by-running{false}", options.equivalence.structural,
               "--check-equivalence: compare on numbers even when the modules are structurally "
               "identical (see docs/interpreter.md)");
  app.add_option("--check-scope", options.equivalence.scope,
                 "--check-equivalence: what runs when the structure differs: auto (the whole "
                 "module if it fits the limits, else the cone of the changed instructions), "
                 "module, cone (docs/interpreter.md)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, eval::EquivalenceOptions::Scope>{
              {"auto", eval::EquivalenceOptions::Scope::kAuto},
              {"module", eval::EquivalenceOptions::Scope::kModule},
              {"cone", eval::EquivalenceOptions::Scope::kCone}},
          CLI::ignore_case));
  app.add_option("--check-samples", options.equivalence.samples,
                 "--check-equivalence: indices kept along each independent dimension sampled "
                 "when a changed region does not fit the limits; 0 = never sample (default 64)");
  app.add_flag("--allow-undecided", options.allow_undecided,
               "--check-equivalence: when no verdict is reached, warn and write the module (exit 0)");
  app.add_option("--max-array-elements", options.equivalence.interpreter.max_array_elements,
                 "--check-equivalence: largest array, in elements (default 2^27)");
  app.add_option("--max-memory", options.max_memory_mib,
                 "--check-equivalence: MiB of values held over all devices (default 4096)");
  app.add_option("--max-work", options.equivalence.interpreter.max_work,
                 "--check-equivalence: element operations over all devices (default 2^36)");

  if (std::optional<int> exit = tool::ParseCommandLine(app, kTool, argc, argv)) return *exit;
  if (nxd_flag->count() > 0) options.pass_options.collective_matmul_nxd = nxd;
  if (options.check_time_budget > 0) options.equivalence.time_budget_seconds = options.check_time_budget;
  options.equivalence.interpreter.max_memory_bytes = options.max_memory_mib << 20;
  options.equivalence.progress = true;
  if (aggressive_flag->count() > 0) options.pass_options.collective_permute_aggressive = aggressive;
  if (sb_flag->count() > 0) options.pass_options.sb_to_sb_threshold_mb = sb_threshold_mb;

  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  if (!registry.status().ok()) {
    std::fprintf(stderr, "hilo-opt: internal error: pass registry: %s\n",
                 std::string(registry.status().message()).c_str());
    return kExitInternal;
  }
  if (options.list_passes) {
    ListPasses(registry);
    return kExitOk;
  }

  // Unknown names and unwritable outputs fail before any input is read.
  std::vector<std::string> pass_names = ParsePassList(options.passes);
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> check =
      registry.BuildPipeline(pass_names, options.pass_options);
  if (!check.ok()) return tool::Fail(kTool, check.status());
  options.explain = !explain.empty();
  options.pass_options.record_details = options.explain || !options.report.empty();
  if (options.explain && explain != "all") {
    absl::StatusOr<absl::flat_hash_set<std::string>> only =
        PassesNamed(registry, explain, options.pass_options);
    if (!only.ok()) return tool::Fail(kTool, only.status());
    options.explain_only = *std::move(only);
  }
  if (absl::Status status = CheckOutputs(options); !status.ok()) return tool::Fail(kTool, status);
  tool::ReexecWithMallocTunables(argv, options.input);  // before anything large is allocated
  tool::UseOneMallocArena();  // before the verifier thread starts

  Driver driver(options, registry, std::move(pass_names));
  return driver.Run();
}

}  // namespace
}  // namespace hilo

int main(int argc, char** argv) {
  return hilo::tool::RunTool(hilo::kTool, [&] { return hilo::Main(argc, argv); });
}
