#pragma once

// The rendezvous key-value store at MASTER_ADDR:MASTER_PORT, speaking PyTorch's c10d TCPStore
// wire protocol. Under torchrun the elastic agent already serves that store
// (TORCHELASTIC_USE_AGENT_STORE=True), so the ranks must be its clients; started by hand or by
// lockstep-run, a TcpStoreServer of ours serves it instead. Keys are UTF-8 text, values bytes.
//
// Keys travel with torch's client prefix "/", so that a key set here is the key a torch client
// (torch.distributed.TCPStore) of the same store reads under the same name, and the other way
// round. Tested against torch 2.15 (libuv and classic servers; tests/parallel/tcp_store_*).

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/status.h"

namespace lockstep::parallel {

// A client of one store, over one TCP connection. Thread-safe: requests are serialized, each
// one bounded by the timeout, so a dead or silent server is an error, never a hang. After an
// I/O error the connection is closed and every later request fails with that error.
class TcpStore {
 public:
  // Connects to host:port, retrying until `timeout` (the server may start later), and checks
  // that the peer answers the protocol's PING. `timeout` also bounds every later request.
  static absl::StatusOr<std::unique_ptr<TcpStore>> Connect(const std::string& host, int port,
                                                           std::chrono::milliseconds timeout);
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  absl::Status Set(const std::string& key, const std::string& value);
  // Waits for the key to exist (within the timeout), then returns its value.
  absl::StatusOr<std::string> Get(const std::string& key);
  // Adds `delta` to the counter `key` (absent: 0) and returns the new value.
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta);
  // Waits until every key exists; on timeout the error names the keys still missing.
  absl::Status Wait(const std::vector<std::string>& keys);
  absl::Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  // Whether every key exists now.
  absl::StatusOr<bool> Check(const std::vector<std::string>& keys);
  // Sets `key` to `desired` if its value is `expected` (absent counts as "" here) and returns
  // the value it has afterwards. As in torch, an absent key with a non-empty `expected` is left
  // absent and `expected` is returned.
  absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired);
  // Whether the key existed.
  absl::StatusOr<bool> DeleteKey(const std::string& key);

  const std::string& address() const { return address_; }  // "host:port"
  // This end of the connection's address ("10.0.0.7"): the address of this host on the route
  // to the store, which the other ranks reach it at too.
  const std::string& local_address() const { return local_address_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  TcpStore(int fd, std::string address, std::chrono::milliseconds timeout);
  absl::Status Send(const std::string& message);
  absl::Status Receive(char* data, size_t size, std::chrono::steady_clock::time_point deadline);
  template <typename T>
  absl::StatusOr<T> ReceiveValue();
  absl::StatusOr<std::string> ReceiveBytes();
  absl::Status WaitLocked(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  absl::Status Usable() const;
  // Closes the connection, whose place in the protocol is lost, and keeps `status` as the
  // answer to every later request.
  absl::Status Broken(const absl::Status& status);
  // `status` with the address and the request in front.
  absl::Status Named(const absl::Status& status, absl::string_view operation) const;

  std::mutex mutex_;
  int fd_;
  const std::string address_;
  const std::string local_address_;
  const std::chrono::milliseconds timeout_;
  absl::Status broken_;  // why the connection was closed; OK while open
};

// Serves the protocol on a thread of its own, on every address of this host (IPv6 and IPv4),
// until destroyed. Answers VALIDATE, PING, SET, COMPARE_SET, GET, ADD, CHECK, WAIT (answered
// when the last missing key appears), CANCEL_WAIT, GETNUMKEYS, DELETE_KEY, APPEND, MULTI_GET and
// MULTI_SET; closes a connection that sends anything else, or does not VALIDATE first.
class TcpStoreServer {
 public:
  // `port` 0 picks a free port. A port in use is an error naming it.
  static absl::StatusOr<std::unique_ptr<TcpStoreServer>> Start(int port);
  ~TcpStoreServer();  // stops the thread, closes every socket
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }

 private:
  class Loop;  // tcp_store_server.cc
  TcpStoreServer(int port, std::unique_ptr<Loop> loop);

  const int port_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace lockstep::parallel
