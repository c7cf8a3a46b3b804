// The samples of a search per config as NCCL runs it, and their estimates (see internal/samples.hpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "optimizer/internal/samples.hpp"
#include "optimizer/internal/stats.hpp"

namespace ccltune::optimizer::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<Sample> kNone;

Config Plain(const Config& c) { return Config{c.algo, c.proto, c.channels, 0}; }

}  // namespace

void SampleStore::NoteRan(const Config& asked, const Config& ran) {
  if (!ran.HasSubspace() || ran.channels <= 0) return;
  if (asked.IsDefault()) {
    if (!default_ran_ || !(*default_ran_ == Plain(ran))) ++truth_version_;
    default_ran_ = Plain(ran);
    return;
  }
  if (!asked.HasSubspace()) return;
  const Config before = Effective(asked);
  Config r = Plain(ran);
  r.chunk_bytes = asked.chunk_bytes;
  auto [known, inserted] = ran_.try_emplace(KeyOf(asked), r);
  if (!inserted && known->second == r) return;  // nothing new
  known->second = r;
  ++truth_version_;
  const std::pair<int, int> sub{asked.algo, asked.proto};
  if (asked.channels > 0 && ran.algo == asked.algo && ran.proto == asked.proto) {
    if (ran.channels < asked.channels && (max_channels_ <= 0 || asked.channels >= max_channels_)) {
      auto [it, inserted] = ceiling_.try_emplace(sub, ran.channels);
      if (!inserted) it->second = std::min(it->second, ran.channels);
    } else if (ran.channels >= asked.channels) {
      int& k = known_up_to_[sub];
      k = std::max(k, asked.channels);
    }
  }
  // This request's samples stored under the old guess move to what NCCL really ran (other requests
  // guessed to run the same stay: their guess is still all that is known of them).
  const Config after = TwinOfDefault(asked) ? Config{} : Effective(asked);
  if (!(after == before)) {
    auto it = samples_.find(KeyOf(before));
    if (it != samples_.end() && !before.IsDefault()) {
      std::vector<Sample> moved, stay;
      for (const Sample& s : it->second) (s.asked == KeyOf(asked) ? moved : stay).push_back(s);
      if (stay.empty()) {
        samples_.erase(it);
      } else {
        it->second = std::move(stay);
      }
      auto& dst = samples_[KeyOf(after)];
      dst.insert(dst.end(), moved.begin(), moved.end());
      std::sort(dst.begin(), dst.end(), [](const Sample& a, const Sample& b) { return a.index < b.index; });
      if (after.IsDefault()) IndexDefaults();
      ++version_;
    }
  }
}

void SampleStore::IndexDefaults() {
  default_by_stream_.clear();
  for (const Sample& s : Of(Config{})) default_by_stream_[s.stream].push_back(s);
}

Config SampleStore::Effective(const Config& asked) const {
  if (asked.IsDefault() || !asked.HasSubspace()) return asked;
  if (auto it = ran_.find(KeyOf(asked)); it != ran_.end()) return it->second;
  Config c = asked;
  if (auto it = ceiling_.find({asked.algo, asked.proto}); it != ceiling_.end() && c.channels > it->second)
    c.channels = it->second;
  return c;
}

bool SampleStore::TwinOfDefault(const Config& asked) const {
  if (asked.IsDefault()) return true;
  if (!default_ran_ || asked.chunk_bytes != 0) return false;
  return Effective(asked) == *default_ran_;
}

int SampleStore::Ceiling(int algo, int proto) const {
  auto it = ceiling_.find({algo, proto});
  return it == ceiling_.end() ? 0 : it->second;
}

bool SampleStore::ChannelsKnown(int algo, int proto, int channels) const {
  if (Ceiling(algo, proto) > 0) return true;
  // NCCL's default runs this subspace on that many channels: fewer or as many exist for it.
  if (default_ran_ && default_ran_->algo == algo && default_ran_->proto == proto && channels <= default_ran_->channels)
    return true;
  auto it = known_up_to_.find({algo, proto});
  return it != known_up_to_.end() && channels <= it->second;
}

void SampleStore::Add(const Config& asked, double us, int stream) {
  const Config key = TwinOfDefault(asked) ? Config{} : Effective(asked);
  const Sample s{us, next_index_++, stream, KeyOf(asked)};
  samples_[KeyOf(key)].push_back(s);
  if (key.IsDefault()) default_by_stream_[stream].push_back(s);
  ++version_;
}

const std::vector<Sample>& SampleStore::Of(const Config& effective) const {
  auto it = samples_.find(KeyOf(effective));
  return it == samples_.end() ? kNone : it->second;
}

int SampleStore::Count(const Config& effective, int64_t since) const {
  const std::vector<Sample>& v = Of(effective);
  if (since <= 0) return static_cast<int>(v.size());
  return static_cast<int>(std::count_if(v.begin(), v.end(), [&](const Sample& s) { return s.index >= since; }));
}

std::vector<Config> SampleStore::Measured() const {
  std::vector<Config> out;
  for (const auto& [k, v] : samples_)
    if (!v.empty()) out.push_back(ConfigOf(k));
  return out;
}

double SampleStore::Absolute(const Config& effective) const {
  std::vector<double> v;
  for (const Sample& s : Of(effective)) v.push_back(s.us);
  return v.empty() ? kInf : RobustEstimate(std::move(v));
}

double SampleStore::LocalDefault(int64_t index, int stream, std::vector<int64_t>* used) const {
  // The kLocal default samples of `stream` nearest in arrival order (ties: earlier first).
  auto it = default_by_stream_.find(stream);
  if (it == default_by_stream_.end() || it->second.empty()) return kInf;
  const std::vector<Sample>& d = it->second;
  auto pos = std::lower_bound(d.begin(), d.end(), index, [](const Sample& s, int64_t i) { return s.index < i; });
  int lo = static_cast<int>(pos - d.begin()) - 1, hi = static_cast<int>(pos - d.begin());
  const int n = static_cast<int>(d.size());
  double near[kLocal];
  int k = 0;
  while (k < kLocal && (lo >= 0 || hi < n)) {
    const bool take_lo = hi >= n || (lo >= 0 && index - d[lo].index <= d[hi].index - index);
    const Sample& s = take_lo ? d[lo--] : d[hi++];
    if (used) used->push_back(s.index);
    near[k++] = s.us;
  }
  std::sort(near, near + k);
  return k % 2 ? near[k / 2] : 0.5 * (near[k / 2 - 1] + near[k / 2]);
}

std::vector<double> SampleStore::Normalised(const Config& effective, int64_t since) const {
  std::vector<double> out;
  for (const Sample& s : Of(effective)) {
    if (s.index < since) continue;
    const double l = LocalDefault(s.index, s.stream);
    if (l > 0 && std::isfinite(l)) out.push_back(s.us / l);
  }
  return out;
}

double SampleStore::Relative(const Config& effective, int64_t since) const {
  if (effective.IsDefault()) return Of(effective).empty() ? kInf : 1.0;
  if (Count(effective, since) == 0) return kInf;
  auto& cached = relative_cache_[{KeyOf(effective), since}];
  if (cached.first == version_ + 1) return cached.second;
  double v;
  if (Count(Config{}) < 2) {
    const double d = Absolute(Config{});
    v = std::isfinite(d) && d > 0 ? Absolute(effective) / d : kInf;
  } else {
    v = Median(Normalised(effective, since));
  }
  cached = {version_ + 1, v};
  return v;
}

double SampleStore::Noise() const {
  // Robust spread of log(sample / local default) around each config's own median, pooled: the
  // median absolute deviation over all configs, scaled to a Gaussian sigma.
  // The default's own raw samples carry the slow periods that normalising removes from the others':
  // they count only while no other config has repeated samples.
  // Kept until the samples change: every standard error reads it (the race's, once per arm, each time it
  // picks an entry; the final choice's, once per arm).
  if (noise_cache_.first == version_ + 1) return noise_cache_.second;
  std::vector<double> dev, dev_default;
  for (const auto& [k, v] : samples_) {
    const Config c = ConfigOf(k);
    std::vector<double> x;
    if (c.IsDefault()) {
      for (const Sample& s : v) x.push_back(s.us);
    } else {
      x = Normalised(c);
    }
    if (x.size() < 2) continue;
    const double m = Median(x);
    for (double y : x) (c.IsDefault() ? dev_default : dev).push_back(std::fabs(std::log(y / m)));
  }
  if (dev.size() < 4) dev.insert(dev.end(), dev_default.begin(), dev_default.end());
  const double sigma = dev.size() < 4 ? 0 : Median(std::move(dev)) * 1.4826;
  noise_cache_ = {version_ + 1, sigma};
  return sigma;
}

double SampleStore::RelativeStdErr(const Config& effective, double floor, int64_t since) const {
  const int n = Count(effective, since);
  if (n == 0 || Count(Config{}) == 0) return kInf;
  int nd = Count(Config{});
  if (!effective.IsDefault() && Count(Config{}) >= 2) {
    std::vector<int64_t> used;
    for (const Sample& s : Of(effective))
      if (s.index >= since) LocalDefault(s.index, s.stream, &used);
    std::sort(used.begin(), used.end());
    nd = static_cast<int>(std::unique(used.begin(), used.end()) - used.begin());
    if (nd == 0) return kInf;
  }
  // Medians of n normalised samples and of the nd default samples behind their references: both
  // sides' errors add in quadrature (conservative: the normalised spread already holds some of the
  // default's noise).
  const double sigma = std::max(Noise(), floor);
  return 1.25 * sigma * std::sqrt(1.0 / n + 1.0 / nd);
}

double SampleStore::OwnStdErr(const Config& effective, double floor, int64_t since) const {
  const int n = Count(effective, since);
  if (n == 0) return kInf;
  return 1.25 * std::max(Noise(), floor) / std::sqrt(static_cast<double>(n));
}

void SampleStore::Clear() {
  samples_.clear();
  default_by_stream_.clear();
  relative_cache_.clear();
  ++version_;
  next_index_ = 0;
}

}  // namespace ccltune::optimizer::internal
