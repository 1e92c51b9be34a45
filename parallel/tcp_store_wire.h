#pragma once

// PyTorch's c10d TCPStore wire protocol, shared by the client (tcp_store.cc) and the server
// (tcp_store_server.cc) of parallel/tcp_store.h. Internal: include tcp_store.h instead.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace lockstep::parallel::tcp_store_wire {

// The wire format of torch/csrc/distributed/c10d (store/TCPStoreBackend.hpp, Utils.hpp): a
// request is one QueryType byte and its arguments; integers travel in host byte order, strings
// and byte vectors as a uint64 length and the bytes, key lists as a uint64 count and the keys.
static_assert(std::endian::native == std::endian::little,
              "torch's store sends host-order integers; only little-endian hosts are tested");

enum class Query : uint8_t {
  kValidate = 0,
  kSet = 1,
  kCompareSet = 2,
  kGet = 3,
  kAdd = 4,
  kCheck = 5,
  kWait = 6,
  kGetNumKeys = 7,
  kDeleteKey = 8,
  kAppend = 9,
  kMultiGet = 10,
  kMultiSet = 11,
  kCancelWait = 12,
  kPing = 13,
};
enum class CheckResponse : uint8_t { kReady = 0, kNotReady = 1 };
enum class WaitResponse : uint8_t { kStopWaiting = 0, kWaitCanceled = 1 };

// A connection's first request: VALIDATE and this number. torch's servers ignore or drop a
// connection that sends anything else first.
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
// torch's client puts this in front of every key (TCPStore::keyPrefix_).
constexpr absl::string_view kKeyPrefix = "/";
// torch's libuv server's limits, kept here too so that what works against ours works there.
constexpr uint64_t kMaxKeyBytes = 8 * 1024;
constexpr uint64_t kMaxValueBytes = 8 * 1024 * 1024;
constexpr uint64_t kMaxKeyCount = 128 * 1024;
// An answer larger than this is garbage, not a value (torch's classic server has no limit).
constexpr uint64_t kMaxAnswerBytes = uint64_t{1} << 30;

inline std::string ErrnoText(int error) { return std::generic_category().message(error); }

// A request or answer being written.
class Writer {
 public:
  Writer() = default;
  explicit Writer(Query query) { Value(static_cast<uint8_t>(query)); }
  template <typename T>
  Writer& Value(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
    return *this;
  }
  Writer& Bytes(absl::string_view bytes) {
    Value<uint64_t>(bytes.size());
    bytes_.append(bytes.data(), bytes.size());
    return *this;
  }
  // A key as torch's client sends it.
  Writer& Key(absl::string_view key) {
    Value<uint64_t>(kKeyPrefix.size() + key.size());
    absl::StrAppend(&bytes_, kKeyPrefix, key);
    return *this;
  }
  Writer& Keys(const std::vector<std::string>& keys) {
    Value<uint64_t>(keys.size());
    for (const std::string& key : keys) Key(key);
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};
// Reads one request from the bytes that have arrived: a read fails when they are not all there
// yet (wait for more), or when a size breaks a limit (bad(): drop the connection).
class Reader {
 public:
  explicit Reader(absl::string_view data) : data_(data) {}
  template <typename T>
  bool Value(T* value) {
    if (data_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Bytes(std::string* bytes, uint64_t limit) {
    uint64_t size = 0;
    if (!Value(&size)) return false;
    if (size > limit) return Bad();
    if (data_.size() - pos_ < size) return false;
    bytes->assign(data_.data() + pos_, size);
    pos_ += size;
    return true;
  }
  bool Keys(std::vector<std::string>* keys) {
    uint64_t count = 0;
    if (!Value(&count)) return false;
    if (count > kMaxKeyCount) return Bad();
    keys->resize(count);
    for (std::string& key : *keys) {
      if (!Bytes(&key, kMaxKeyBytes)) return false;
    }
    return true;
  }
  size_t pos() const { return pos_; }
  bool bad() const { return bad_; }

 private:
  bool Bad() {
    bad_ = true;
    return false;
  }
  absl::string_view data_;
  size_t pos_ = 0;
  bool bad_ = false;
};

}  // namespace lockstep::parallel::tcp_store_wire
