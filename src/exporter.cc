// Export and summary (see exporter.hpp).
#include "src/exporter.hpp"

#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ccltune/ccltune.h"
#include "src/comm_state.hpp"
#include "src/log.hpp"
#include "src/runtime.hpp"
#include "src/summary.hpp"

namespace ccltune {
namespace {

std::string ChannelsNote(int channels) {
  return channels > 0 ? absl::StrFormat(", calls ran on up to %d channels", channels) : std::string();
}

}  // namespace

void Exporter::Snapshot(CommState& cs) {
  if (cs.rank() != 0 || cs.passthrough()) return;
  // Not structured bindings: the lambda below uses them, which clang before 16 does not accept.
  for (const auto& item : cs.workloads) {
    const uint64_t h = item.first;
    const auto& w = item.second;
    std::optional<Leader::WorkloadStats> st;
    if (cs.leader) st = cs.leader->StatsOf(h);
    cs.table().Update(w.key, [&](config_table::Entry& e) {
      e.calls = w.calls;
      if (!st) return;
      e.default_us = st->default_us;
      e.tuned_us = st->incumbent_us;
      e.samples = static_cast<uint64_t>(st->samples);
      if (!w.key.grouped) e.class_min_bytes = st->size_class.min_bytes, e.class_max_bytes = st->size_class.max_bytes;
    });
  }
}

void Exporter::Retire(CommState& cs) {
  Snapshot(cs);
  std::lock_guard<std::mutex> lock(mu_);
  retired_.comms.emplace_back(rt_.lifecycle().FingerprintOf(cs), cs.table().Snapshot());
}

int64_t Exporter::retired_changes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return retired_changes_;
}

void Exporter::AddRetiredChanges(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  retired_changes_ += n;
}

int Exporter::Export(const char* path) {
  const Settings& settings = rt_.settings();
  std::string p = path != nullptr ? path : settings.export_path;
  if (p.empty()) return ccltuneInvalidArgument;
  config_table::ExportSet set;
  {
    std::lock_guard<std::mutex> lock(mu_);
    set = retired_;
  }
  for (auto& cs : rt_.comms().Live()) {
    if (cs->rank() != 0 || cs->passthrough()) continue;
    std::lock_guard<std::mutex> lock(cs->mu);
    Snapshot(*cs);
    set.comms.emplace_back(rt_.lifecycle().FingerprintOf(*cs), cs->table().Snapshot());
  }
  if (set.comms.empty()) return ccltuneNotFound;  // this process leads no communicator
  std::lock_guard<std::mutex> one_at_a_time(export_mu_);
  const int n = ++exports_;
  // CCLTUNE_TEST_EXPORT_PAUSE: the export the SIGKILL test kills, once its new file is complete.
  auto pause_for_test = [&](const std::string& temp) {
    if (settings.test_export_pause != n) return;
    (void)config_table::WriteFileAtomic(p + ".paused", absl::StrCat(getpid(), "\n"));
    LogAlways(absl::StrFormat("testing: export %d paused before its rename (pid %d, temporary file %s)", n,
                              static_cast<int>(getpid()), temp));
    for (;;) ::pause();
  };
  if (absl::Status st = config_table::WriteFileAtomic(p, config_table::ToJson(set), pause_for_test); !st.ok()) {
    CCLTUNE_WARN(kExport, "%s", st.message());
    return ccltuneIoError;
  }
  std::string csv = p;
  if (csv.size() > 5 && csv.compare(csv.size() - 5, 5, ".json") == 0) csv.resize(csv.size() - 5);
  csv += ".csv";
  if (absl::Status st = config_table::WriteFileAtomic(csv, config_table::ToCsv(set)); !st.ok()) {
    CCLTUNE_WARN(kExport, "%s", st.message());
    return ccltuneIoError;
  }
  CCLTUNE_INFO(kExport, "exported %d communicator tables to %s and %s", static_cast<int>(set.comms.size()), p, csv);
  return ccltuneSuccess;
}

void Exporter::StartFlusher() {
  const Settings& settings = rt_.settings();
  if (settings.export_path.empty() || settings.export_interval_s <= 0) return;
  std::lock_guard<std::mutex> lock(flush_mu_);
  if (flusher_.joinable()) return;
  flusher_pid_ = getpid();
  flusher_ = std::thread([this, every = std::chrono::seconds(settings.export_interval_s)] {
    std::unique_lock<std::mutex> lock(flush_mu_);
    while (!flush_cv_.wait_for(lock, every, [this] { return flush_stop_; })) {
      lock.unlock();
      Export(nullptr);  // NotFound while this process leads no communicator: nothing written
      lock.lock();
    }
  });
}

void Exporter::StopFlusher() {
  {
    std::lock_guard<std::mutex> lock(flush_mu_);
    flush_stop_ = true;
  }
  flush_cv_.notify_all();
  // A forked child inherits the object but not the thread: only its owner joins it.
  if (flusher_.joinable() && flusher_pid_ == getpid()) flusher_.join();
}

void Exporter::AtExit() {
  StopFlusher();
  const Settings& settings = rt_.settings();
  if (!settings.export_path.empty()) Export(nullptr);
  if (!settings.summary) return;
  // Communicators destroyed before exit (PyTorch destroys its process groups) first, then live ones.
  config_table::ExportSet retired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    retired = retired_;
  }
  for (const auto& [fp, all] : retired.comms) {
    const std::string text = SummaryText(
        absl::StrFormat("destroyed communicator of %d ranks%s", fp.nranks, ChannelsNote(fp.channels)), all, fp.nranks);
    if (!text.empty()) LogAlways(text);
  }
  for (auto& cs : rt_.comms().Live()) {
    if (cs->rank() != 0 || cs->passthrough()) continue;
    std::lock_guard<std::mutex> lock(cs->mu);
    Snapshot(*cs);
    const std::string text = SummaryText(
        absl::StrFormat("communicator %p, %d ranks%s%s%s", static_cast<void*>(cs->comm()), cs->nranks(),
                        ChannelsNote(cs->max_ran_channels), cs->stopped ? ", tuning stopped: " : "", cs->stop_reason),
        cs->table().Snapshot(), cs->nranks());
    if (!text.empty()) LogAlways(text);
  }
}

}  // namespace ccltune
