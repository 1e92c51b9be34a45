#include "ckpt/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/file_io.h"

namespace lockstep::ckpt {
namespace {

// This process's locks, by the lock file's device and inode: flock refuses a second open of the
// file even in the process that holds it, so a second take for the same job is answered here.
struct HeldLock {
  uint64_t device;
  uint64_t inode;
  std::weak_ptr<DirectoryLock> lock;
};

std::mutex& HeldLocksMutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<HeldLock>& HeldLocks() {
  static std::vector<HeldLock> locks;
  return locks;
}

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// "job J\nhost H\npid P\n"
std::string Record(const LockHolder& holder) {
  return absl::StrCat("job ", holder.job, "\nhost ", holder.host, "\npid ", holder.pid, "\n");
}

LockHolder ParseRecord(absl::string_view text) {
  LockHolder holder;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::pair<absl::string_view, absl::string_view> field = absl::StrSplit(line, ' ');
    if (field.first == "job") holder.job = std::string(field.second);
    if (field.first == "host") holder.host = std::string(field.second);
    if (field.first == "pid" && !absl::SimpleAtoi(field.second, &holder.pid)) holder.pid = 0;
  }
  return holder;
}

// Replaces the lock file's contents with `holder`'s record, through the locked descriptor.
absl::Status WriteRecord(int fd, const LockHolder& holder, const std::string& path) {
  const std::string record = Record(holder);
  if (ftruncate(fd, 0) != 0) return Errno("truncating", path);
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = pwrite(fd, record.data() + done, record.size() - done, done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("writing", path);
    done += n;
  }
  // Ranks on other hosts read it once this rank reports the lock taken.
  if (fsync(fd) != 0) return Errno("syncing", path);
  return absl::OkStatus();
}

}  // namespace

std::string DescribeHolder(const LockHolder& holder) {
  if (holder.job.empty()) return "a job that has not recorded its host and pid yet";
  return absl::StrCat("host ", holder.host, ", pid ", holder.pid);
}

absl::StatusOr<std::shared_ptr<DirectoryLock>> DirectoryLock::TryAcquire(const std::string& dir,
                                                                         const LockHolder& me) {
  LS_RETURN_IF_ERROR(MakeDirectories(dir));
  const std::string path = JoinPath(dir, kLockFileName);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("opening", path);
  struct stat info;
  if (fstat(fd, &info) != 0) {
    absl::Status status = Errno("reading the status of", path);
    close(fd);
    return status;
  }
  std::lock_guard<std::mutex> guard(HeldLocksMutex());
  std::vector<HeldLock>& held = HeldLocks();
  std::erase_if(held, [](const HeldLock& entry) { return entry.lock.expired(); });
  for (const HeldLock& entry : held) {
    std::shared_ptr<DirectoryLock> lock = entry.lock.lock();
    if (lock == nullptr || entry.device != info.st_dev || entry.inode != info.st_ino) continue;
    close(fd);
    return lock->holder().job == me.job ? lock : nullptr;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const bool held_elsewhere = errno == EWOULDBLOCK;
    absl::Status status = Errno("locking", path);
    close(fd);
    if (held_elsewhere) return nullptr;
    return status;
  }
  if (absl::Status written = WriteRecord(fd, me, path); !written.ok()) {
    close(fd);
    return written;
  }
  std::shared_ptr<DirectoryLock> lock(new DirectoryLock(fd, me));
  held.push_back({static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino), lock});
  return lock;
}

absl::StatusOr<LockHolder> DirectoryLock::ReadHolder(const std::string& dir) {
  LS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(JoinPath(dir, kLockFileName)));
  return ParseRecord(text);
}

DirectoryLock::~DirectoryLock() { close(fd_); }

}  // namespace lockstep::ckpt
