#pragma once

// The lock of a checkpoint directory: DIR/.lockstep.lock, held with flock(2) by the job that
// writes checkpoints there, so that a second job writing the same directory (their steps would
// mix) is refused, naming the first. The kernel drops the lock when its holder dies, so a
// relaunch after a SIGKILL is never blocked by a stale lock. On NFS, Linux maps flock to POSIX
// byte-range locks, which the server arbitrates across hosts.
//
// The ranks of one job may share the directory: one of them takes the lock and records the
// job's id; the others find it held under that id and go on (see LockCheckpointDirectory in
// train/checkpoint_callback.h for the protocol across ranks).

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace lockstep::ckpt {

inline constexpr char kLockFileName[] = ".lockstep.lock";

// Who holds a directory's lock, as its lock file records it.
struct LockHolder {
  std::string job;  // the same on every rank of one job, unique to it
  std::string host;
  int64_t pid = 0;
};

// "host H, pid P" (or that the holder has not recorded itself yet).
std::string DescribeHolder(const LockHolder& holder);

class DirectoryLock {
 public:
  // Takes the lock of `dir` (creating both where missing) without waiting and records `me` in
  // it. Null when another open of the lock file holds it: another job, or another rank of this
  // job sharing the directory (ReadHolder tells which). In one process, taking it again for the
  // same job returns the lock already held.
  static absl::StatusOr<std::shared_ptr<DirectoryLock>> TryAcquire(const std::string& dir,
                                                                   const LockHolder& me);
  // The holder recorded in the lock file of `dir`; an empty job while the holder has yet to
  // record itself.
  static absl::StatusOr<LockHolder> ReadHolder(const std::string& dir);

  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();  // closing the file releases the lock

  const LockHolder& holder() const { return holder_; }

 private:
  DirectoryLock(int fd, LockHolder holder) : fd_(fd), holder_(std::move(holder)) {}

  int fd_;
  LockHolder holder_;
};

}  // namespace lockstep::ckpt
