#include "tests/parallel/stand_in_device.h"

#include <utility>

namespace lockstep::stand_in {

StreamThread::StreamThread() : thread_([this] { Loop(); }) {}

StreamThread::~StreamThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void StreamThread::Queue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  changed_.notify_all();
}

void StreamThread::Drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && !running_; });
}

void StreamThread::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    work();
    lock.lock();
    running_ = false;
    changed_.notify_all();
  }
}

struct StandInBackend::Recording : CapturedWork {
  std::vector<std::function<void()>> work;
};

absl::Status StandInBackend::BeginCapture(int) {
  std::lock_guard<std::mutex> lock(mutex_);
  recording_ = std::make_unique<Recording>();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CapturedWork>> StandInBackend::EndCapture(int) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<Recording> recording = std::move(recording_);
  if (refuse_) return absl::InternalError("the stand-in device refuses to record (test)");
  return std::unique_ptr<CapturedWork>(std::move(recording));
}

absl::Status StandInBackend::Launch(CapturedWork& work, int) {
  for (const std::function<void()>& item : static_cast<Recording&>(work).work) {
    stream_.Queue(item);
  }
  stream_.Drain();
  return absl::OkStatus();
}

void StandInBackend::Queue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (recording_ != nullptr) {
      recording_->work.push_back(std::move(work));
      return;
    }
  }
  stream_.Queue(std::move(work));
}

bool StandInBackend::capturing() {
  std::lock_guard<std::mutex> lock(mutex_);
  return recording_ != nullptr;
}

void StandInBackend::RefuseRecordings(bool refuse) {
  std::lock_guard<std::mutex> lock(mutex_);
  refuse_ = refuse;
}

StandInBackend& StandIn() {
  static StandInBackend* backend = [] {
    auto owned = std::make_unique<StandInBackend>();
    StandInBackend* raw = owned.get();
    RegisterBackend(kStandInDeviceType, std::move(owned));
    return raw;
  }();
  return *backend;
}

}  // namespace lockstep::stand_in
