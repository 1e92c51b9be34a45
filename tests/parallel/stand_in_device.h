#pragma once

// A device for the device-collective tests on machines without a GPU (device_collectives_test):
// host memory, kernels on the calling thread (the host is the compute stream), and one stream, a
// thread of its own that runs the work queued on it in order, as a GPU's communication stream
// does. Nothing but DeviceCollectives::ComputeWaitsFor orders the host after that stream, so a
// kernel that forgets to wait reads its bucket before the reduction. A recording
// (Backend::BeginCapture) collects what is queued instead of running it, and a launch queues it
// on the stream again, as a CUDA graph holding collectives does, and returns once it ran: a
// recorded step ends with its waits for every collective (the executor waits for each
// asynchronous kernel at the end of the step).

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/host_backend.h"

namespace lockstep::stand_in {

inline constexpr DeviceType kStandInDeviceType =
    static_cast<DeviceType>(static_cast<int>(DeviceType::kFirstOther) + 12);
inline Device StandInDevice() { return {kStandInDeviceType, 0}; }

// Work run in the order it was queued, on a thread of its own.
class StreamThread {
 public:
  StreamThread();
  ~StreamThread();
  StreamThread(const StreamThread&) = delete;
  StreamThread& operator=(const StreamThread&) = delete;

  void Queue(std::function<void()> work);
  // Returns once everything queued so far has run.
  void Drain();

 private:
  void Loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  bool running_ = false;  // the loop is running an item it took off queue_
  bool stopping_ = false;
  std::thread thread_;
};

class StandInBackend : public HostBackend {
 public:
  std::string name() const override { return "stand-in"; }
  absl::Status BeginCapture(int index) override;
  absl::StatusOr<std::unique_ptr<CapturedWork>> EndCapture(int index) override;
  absl::Status Launch(CapturedWork& work, int index) override;

  // Queues `work` on the stream, or into the recording while one is being made.
  void Queue(std::function<void()> work);
  bool capturing();
  // Returns once everything queued so far ran.
  void Drain() { stream_.Drain(); }
  // While set, recordings fail at their end, as a CUDA graph that cannot be instantiated does.
  void RefuseRecordings(bool refuse);

 private:
  struct Recording;
  std::mutex mutex_;
  std::unique_ptr<Recording> recording_;  // while capturing
  bool refuse_ = false;
  StreamThread stream_;
};

// The backend, registered for kStandInDeviceType on first use.
StandInBackend& StandIn();

}  // namespace lockstep::stand_in
