// CommTable and the helpers both exporters share (state names, merge rule, exportability).
#include "config_table/config_table.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "config_table/internal/export_common.hpp"

namespace ccltune::config_table {
namespace {

constexpr std::array<std::string_view, 5> kStateNames = {"default", "searching", "converged", "imported", "forced"};

// Sort order of snapshots and exports: the key's string, then its hash (two keys never print alike
// today, but the order must not depend on map iteration if they ever did).
bool KeyLess(const Entry& a, const Entry& b) {
  const std::string sa = a.key.ToString(), sb = b.key.ToString();
  if (sa != sb) return sa < sb;
  return a.key.Hash() < b.key.Hash();
}

}  // namespace

bool Supersedes(const Entry& a, const Entry& b) {
  // A final answer beats a search in progress whatever their sample counts: import skips the latter.
  if (internal::IsFinal(a.state) != internal::IsFinal(b.state)) return internal::IsFinal(a.state);
  return a.samples > b.samples;
}

std::string_view StateName(WorkloadState s) {
  const int i = static_cast<int>(s);
  return (i >= 0 && i < static_cast<int>(kStateNames.size())) ? kStateNames[i] : std::string_view("?");
}

void CommTable::set_fingerprint(const Fingerprint& fp) {
  std::lock_guard<std::mutex> lock(mu_);
  fp_ = fp;
}

std::optional<Entry> CommTable::Find(uint64_t hash) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(hash);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::vector<Entry> CommTable::Snapshot() const {
  std::vector<Entry> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.reserve(entries_.size());
    for (const auto& [hash, entry] : entries_) out.push_back(entry);
  }
  std::sort(out.begin(), out.end(), KeyLess);
  return out;
}

namespace internal {

bool IsReduction(Coll c) { return c == Coll::kReduce || c == Coll::kAllReduce || c == Coll::kReduceScatter; }

bool Exportable(const Entry& e) {
  if (e.key.calls.empty()) return false;
  if (!e.key.grouped && e.key.calls.size() != 1) return false;
  for (const CallDesc& c : e.key.calls) {
    const int coll = static_cast<int>(c.coll);
    if (coll < 0 || coll >= kNumColls) return false;
    if (DtypeName(c.dtype) == "?") return false;
    if (c.op < -1 || c.op >= kNumReduceOps) return false;  // custom ops (PreMulSum, ...) are per communicator
    if (IsReduction(c.coll) != (c.op >= 0)) return false;
  }
  return true;
}

bool IsFinal(WorkloadState s) { return s == WorkloadState::kConverged || s == WorkloadState::kImported; }

std::optional<WorkloadState> ParseState(std::string_view name) {
  for (int i = 0; i < static_cast<int>(kStateNames.size()); ++i)
    if (name == kStateNames[i]) return static_cast<WorkloadState>(i);
  return std::nullopt;
}

std::optional<int> ParseRedOp(std::string_view name) {
  for (int i = 0; i < kNumReduceOps; ++i)
    if (name == RedOpName(i)) return i;
  return std::nullopt;
}

std::vector<std::pair<Fingerprint, std::vector<Entry>>> MergeByFingerprint(const ExportSet& set) {
  std::vector<std::pair<Fingerprint, std::vector<Entry>>> out;
  std::vector<std::unordered_map<uint64_t, size_t>> index;  // per output block: key hash -> position
  for (const auto& [fp, entries] : set.comms) {
    size_t b = 0;
    while (b < out.size() && !(out[b].first == fp)) ++b;
    if (b == out.size()) {
      out.emplace_back(fp, std::vector<Entry>{});
      index.emplace_back();
    }
    for (const Entry& e : entries) {
      if (!Exportable(e)) continue;
      auto [it, inserted] = index[b].try_emplace(e.key.Hash(), out[b].second.size());
      if (inserted) {
        out[b].second.push_back(e);
      } else if (Supersedes(e, out[b].second[it->second])) {
        out[b].second[it->second] = e;
      }
    }
  }
  for (auto& block : out) std::sort(block.second.begin(), block.second.end(), KeyLess);
  return out;
}

std::string OneLine(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

absl::StatusOr<std::string> ReadImportFile(const std::string& path) { return ReadFileNamed(path, "import file"); }

absl::StatusOr<std::string> ReadFileNamed(const std::string& path, std::string_view what) {
  auto unreadable = [&](int err) {
    if (err == ENOENT || err == ENOTDIR)
      return absl::NotFoundError(OneLine(Cat("ccltune: ", what, " ", path, " not found")));
    return absl::Status(absl::ErrnoToStatusCode(err),
                        OneLine(Cat("ccltune: ", what, " ", path, " cannot be read: ", std::strerror(err))));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unreadable(errno);
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;  // EISDIR for a directory
      ::close(fd);
      return unreadable(err);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace internal
}  // namespace ccltune::config_table
