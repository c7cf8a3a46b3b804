// WriteFileAtomic: readers of `path` see the old content or the new, never a half file, even
// across a crash: write a unique temporary beside the target, fsync it, rename it over the
// target, fsync the directory so the rename itself is durable.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "config_table/config_table.hpp"
#include "config_table/internal/export_common.hpp"

namespace ccltune::config_table {
namespace {

absl::Status Fail(const std::string& path, std::string_view step, int err) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      internal::Cat("ccltune: cannot write ", path, ": ", step, ": ", std::strerror(err)));
}

// Closes the descriptor and removes the temporary unless released; the only cleanup path.
class TempFile {
 public:
  TempFile(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!name_.empty()) ::unlink(name_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  int Close() {  // returns 0 or errno
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? 0 : errno;
  }
  void Release() { name_.clear(); }  // renamed: nothing left to remove

 private:
  int fd_;
  std::string name_;
};

}  // namespace

absl::Status WriteFileAtomic(const std::string& path, const std::string& content,
                             const std::function<void(const std::string& temp_path)>& before_rename) {
  if (path.empty() || path.back() == '/') return Fail(path, "not a file name", EINVAL);
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);

  // Hidden, unique, in the same directory (rename must not cross file systems).
  std::string tmpl = (dir == "/" ? "/" : dir + "/") + "." + base + ".ccltune-tmp.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());
  if (fd < 0) return Fail(path, "create temporary file", errno);
  TempFile tmp(fd, std::string(buf.data()));

  // mkstemp makes the file 0600; an export is meant to be read by other tools and users.
  if (::fchmod(tmp.fd(), 0644) != 0) return Fail(path, "chmod temporary file", errno);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(tmp.fd(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(path, "write", errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(tmp.fd()) != 0) return Fail(path, "fsync", errno);
  if (const int err = tmp.Close(); err != 0) return Fail(path, "close", err);
  if (before_rename) before_rename(tmp.name());
  if (::rename(tmp.name().c_str(), path.c_str()) != 0) return Fail(path, "rename", errno);
  tmp.Release();

  // The new content is in place; this only makes the rename survive a power cut.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Fail(path, "open directory to sync it", errno);
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL) return Fail(path, "fsync directory", err);  // EINVAL: fs without dir fsync
  return absl::OkStatus();
}

}  // namespace ccltune::config_table
