// The lock of a checkpoint directory: taken once per job in a process, refused to another job,
// visible to other processes, its record naming the holder, free again once released.

#include "ckpt/lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file_io.h"
#include "tests/ckpt/test_util.h"

namespace lockstep::ckpt {
namespace {

using testing::TempDir;

// Whether another process can take the lock of `dir` (a child tries flock on a fresh open).
bool FreeForAnotherProcess(const std::string& dir) {
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(JoinPath(dir, kLockFileName).c_str(), O_RDWR | O_CLOEXEC);
    _exit(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(CkptLockTest, OneJobHoldsTheDirectoryAndTheRecordNamesIt) {
  TempDir root;
  const std::string dir = root.Join("not/yet/made");
  const LockHolder first{.job = "host-a:12:345", .host = "host-a", .pid = 12};
  absl::StatusOr<std::shared_ptr<DirectoryLock>> lock = DirectoryLock::TryAcquire(dir, first);
  ASSERT_TRUE(lock.ok()) << lock.status();
  ASSERT_NE(*lock, nullptr);
  absl::StatusOr<LockHolder> holder = DirectoryLock::ReadHolder(dir);
  ASSERT_TRUE(holder.ok()) << holder.status();
  EXPECT_EQ(holder->job, first.job);
  EXPECT_EQ(DescribeHolder(*holder), "host host-a, pid 12");
  EXPECT_TRUE(ListFiles(dir)->empty()) << "the lock file is hidden from the listings";

  EXPECT_EQ(*DirectoryLock::TryAcquire(dir, first), *lock) << "the same job shares it";
  EXPECT_EQ(*DirectoryLock::TryAcquire(dir, {.job = "b", .host = "b", .pid = 1}), nullptr);
  EXPECT_FALSE(FreeForAnotherProcess(dir));

  lock->reset();
  EXPECT_TRUE(FreeForAnotherProcess(dir));
  const LockHolder second{.job = "b", .host = "b", .pid = 1};
  lock = DirectoryLock::TryAcquire(dir, second);
  ASSERT_TRUE(lock.ok() && *lock != nullptr) << lock.status();
  EXPECT_EQ(DescribeHolder(*DirectoryLock::ReadHolder(dir)), "host b, pid 1");
}

TEST(CkptLockTest, AHolderThatHasNotRecordedItselfIsSaidSo) {
  EXPECT_EQ(DescribeHolder({}), "a job that has not recorded its host and pid yet");
}

}  // namespace
}  // namespace lockstep::ckpt
