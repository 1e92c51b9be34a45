#include "parallel/tcp_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <random>

#include "absl/memory/memory.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "parallel/tcp_store_wire.h"

namespace lockstep::parallel {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using tcp_store_wire::CheckResponse;
using tcp_store_wire::ErrnoText;
using tcp_store_wire::kKeyPrefix;
using tcp_store_wire::kMaxAnswerBytes;
using tcp_store_wire::kMaxKeyBytes;
using tcp_store_wire::kMaxKeyCount;
using tcp_store_wire::kMaxValueBytes;
using tcp_store_wire::kValidationMagic;
using tcp_store_wire::Query;
using tcp_store_wire::WaitResponse;
using tcp_store_wire::Writer;

// Up to 8 keys, quoted, for messages.
std::string QuoteKeys(const std::vector<std::string>& keys) {
  constexpr size_t kShown = 8;
  std::vector<std::string> shown;
  for (size_t i = 0; i < keys.size() && i < kShown; ++i) shown.push_back("'" + keys[i] + "'");
  std::string text = absl::StrJoin(shown, ", ");
  if (keys.size() > kShown) absl::StrAppend(&text, " and ", keys.size() - kShown, " more");
  return text;
}

// Waits until `fd` is ready for `events`: false when the deadline passed first. An error or a
// hang-up counts as ready; the recv or send that follows says which.
absl::StatusOr<bool> PollFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const int64_t left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX)));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return absl::InternalError(absl::StrCat("poll: ", ErrnoText(errno)));
  }
}

// One connection attempt to every address `host` resolves to, each bounded by `deadline`.
absl::StatusOr<int> ConnectOnce(const std::string& host, int port, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve '", host, "': ", ::gai_strerror(resolved)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  absl::Status last = absl::UnavailableError("no address");
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = absl::UnavailableError(absl::StrCat("socket: ", ErrnoText(errno)));
      continue;
    }
    int error = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (error == EINPROGRESS) {
      absl::StatusOr<bool> ready = PollFor(fd, POLLOUT, deadline);
      socklen_t size = sizeof(error);
      if (!ready.ok()) {
        error = EIO;
      } else if (!*ready) {
        error = ETIMEDOUT;
      } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
        error = errno;
      }
    }
    if (error == 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // small requests
      return fd;
    }
    ::close(fd);
    last = absl::UnavailableError(ErrnoText(error));
  }
  return last;
}

// The numeric address of the socket's own end.
std::string LocalAddress(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  char text[NI_MAXHOST] = {};
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0 ||
      ::getnameinfo(reinterpret_cast<sockaddr*>(&address), size, text, sizeof(text), nullptr, 0,
                    NI_NUMERICHOST) != 0) {
    return "";
  }
  return text;
}

std::string JoinHostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

}  // namespace

TcpStore::TcpStore(int fd, std::string address, milliseconds timeout)
    : fd_(fd), address_(std::move(address)), local_address_(LocalAddress(fd)), timeout_(timeout) {}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::unique_ptr<TcpStore>> TcpStore::Connect(const std::string& host, int port,
                                                            milliseconds timeout) {
  const std::string address = JoinHostPort(host, port);
  if (port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous store address ", address, ": the port must be in 1..65535"));
  }
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + timeout;
  const uint32_t nonce = std::random_device()();
  absl::Status last;
  milliseconds backoff(10);
  while (true) {
    absl::StatusOr<int> fd = ConnectOnce(host, port, deadline);
    if (fd.ok()) {
      // VALIDATE, then a PING whose echo shows that a store, not some other service or a
      // socket still in a dead server's backlog, answers.
      std::unique_ptr<TcpStore> store = absl::WrapUnique(new TcpStore(*fd, address, timeout));
      Writer hello(Query::kValidate);
      hello.Value(kValidationMagic).Value(static_cast<uint8_t>(Query::kPing)).Value(nonce);
      uint32_t echo = 0;
      last = store->Send(hello.bytes());
      if (last.ok()) {
        last = store->Receive(reinterpret_cast<char*>(&echo), sizeof(echo),
                              std::max(deadline, Clock::now() + milliseconds(100)));
      }
      if (last.ok() && echo == nonce) return store;
      if (last.ok()) {
        last = absl::DataLossError(
            absl::StrCat("PING ", nonce, " answered with ", echo, ": not a PyTorch TCPStore?"));
      }
    } else {
      last = fd.status();
    }
    const Clock::time_point now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, milliseconds(1000));
  }
  const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  return absl::DeadlineExceededError(
      absl::StrCat("could not reach the rendezvous store at ", address, " within ", timeout.count(),
                   " ms (waited ", waited.count(), " ms); last error: ", last.message()));
}

absl::Status TcpStore::Usable() const {
  if (broken_.ok()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the connection was closed after an earlier error: ", broken_.message()));
}

absl::Status TcpStore::Broken(const absl::Status& status) {
  // The stream's position within the protocol is lost: no later request could be read right.
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  broken_ = status;
  return status;
}

absl::Status TcpStore::Send(const std::string& message) {
  const Clock::time_point deadline = Clock::now() + timeout_;
  size_t sent = 0;
  while (sent < message.size()) {
    const ssize_t n = ::send(fd_, message.data() + sent, message.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      absl::StatusOr<bool> ready = PollFor(fd_, POLLOUT, deadline);
      if (!ready.ok()) return Broken(ready.status());
      if (!*ready) {
        return Broken(absl::DeadlineExceededError(
            absl::StrCat("the store took no data for ", timeout_.count(), " ms")));
      }
    } else if (errno != EINTR) {
      return Broken(absl::UnavailableError(absl::StrCat("send: ", ErrnoText(errno))));
    }
  }
  return absl::OkStatus();
}

absl::Status TcpStore::Receive(char* data, size_t size, Clock::time_point deadline) {
  size_t received = 0;
  while (received < size) {
    const ssize_t n = ::recv(fd_, data + received, size - received, 0);
    if (n > 0) {
      received += static_cast<size_t>(n);
    } else if (n == 0) {
      return Broken(absl::UnavailableError("the store closed the connection"));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      absl::StatusOr<bool> ready = PollFor(fd_, POLLIN, deadline);
      if (!ready.ok()) return Broken(ready.status());
      if (!*ready) {
        return Broken(absl::DeadlineExceededError(
            absl::StrCat("no answer from the store within ", timeout_.count(), " ms")));
      }
    } else if (errno != EINTR) {
      return Broken(absl::UnavailableError(absl::StrCat("recv: ", ErrnoText(errno))));
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<T> TcpStore::ReceiveValue() {
  T value{};
  LS_RETURN_IF_ERROR(Receive(reinterpret_cast<char*>(&value), sizeof(T), Clock::now() + timeout_));
  return value;
}

absl::StatusOr<std::string> TcpStore::ReceiveBytes() {
  const Clock::time_point deadline = Clock::now() + timeout_;
  uint64_t size = 0;
  LS_RETURN_IF_ERROR(Receive(reinterpret_cast<char*>(&size), sizeof(size), deadline));
  if (size > kMaxAnswerBytes) {
    return Broken(absl::DataLossError(
        absl::StrCat("the store answered with a value of ", size, " bytes: not the protocol?")));
  }
  std::string bytes(size, '\0');
  LS_RETURN_IF_ERROR(Receive(bytes.data(), size, deadline));
  return bytes;
}

namespace {

absl::Status CheckKey(const std::string& key) {
  if (kKeyPrefix.size() + key.size() <= kMaxKeyBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the key is ", key.size(),
                                                 " bytes, more than a store accepts (",
                                                 kMaxKeyBytes - kKeyPrefix.size(), ")"));
}

absl::Status CheckValue(const std::string& value) {
  if (value.size() <= kMaxValueBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the value is ", value.size(), " bytes, more than a store accepts (", kMaxValueBytes, ")"));
}

absl::Status CheckKeys(const std::vector<std::string>& keys) {
  if (keys.size() > kMaxKeyCount) {
    return absl::InvalidArgumentError(
        absl::StrCat(keys.size(), " keys, more than a store accepts (", kMaxKeyCount, ")"));
  }
  for (const std::string& key : keys) LS_RETURN_IF_ERROR(CheckKey(key));
  return absl::OkStatus();
}

}  // namespace

absl::Status TcpStore::Named(const absl::Status& status, absl::string_view operation) const {
  return Annotate(status, absl::StrCat("rendezvous store at ", address_, ": ", operation));
}

absl::Status TcpStore::Set(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  absl::Status status = [&]() -> absl::Status {
    LS_RETURN_IF_ERROR(Usable());
    LS_RETURN_IF_ERROR(CheckKey(key));
    LS_RETURN_IF_ERROR(CheckValue(value));
    return Send(Writer(Query::kSet).Key(key).Bytes(value).bytes());
  }();
  return Named(status, absl::StrCat("Set '", key, "'"));
}

absl::StatusOr<std::string> TcpStore::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  absl::StatusOr<std::string> value = [&]() -> absl::StatusOr<std::string> {
    LS_RETURN_IF_ERROR(Usable());
    LS_RETURN_IF_ERROR(CheckKey(key));
    // As torch's client: GET answers an absent key with no bytes, so wait for it first.
    LS_RETURN_IF_ERROR(WaitLocked({key}, timeout_));
    LS_RETURN_IF_ERROR(Send(Writer(Query::kGet).Key(key).bytes()));
    return ReceiveBytes();
  }();
  if (value.ok()) return value;
  return Named(value.status(), absl::StrCat("Get '", key, "'"));
}

absl::StatusOr<int64_t> TcpStore::Add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  absl::StatusOr<int64_t> sum = [&]() -> absl::StatusOr<int64_t> {
    LS_RETURN_IF_ERROR(Usable());
    LS_RETURN_IF_ERROR(CheckKey(key));
    LS_RETURN_IF_ERROR(Send(Writer(Query::kAdd).Key(key).Value<int64_t>(delta).bytes()));
    return ReceiveValue<int64_t>();
  }();
  if (sum.ok()) return sum;
  return Named(sum.status(), absl::StrCat("Add to '", key, "'"));
}

absl::Status TcpStore::Wait(const std::vector<std::string>& keys) { return Wait(keys, timeout_); }

absl::Status TcpStore::Wait(const std::vector<std::string>& keys, milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  absl::Status status = [&]() -> absl::Status {
    LS_RETURN_IF_ERROR(Usable());
    LS_RETURN_IF_ERROR(CheckKeys(keys));
    return WaitLocked(keys, timeout);
  }();
  return Named(status, absl::StrCat("Wait for ", QuoteKeys(keys)));
}

absl::Status TcpStore::WaitLocked(const std::vector<std::string>& keys, milliseconds timeout) {
  LS_RETURN_IF_ERROR(Send(Writer(Query::kWait).Keys(keys).bytes()));
  absl::StatusOr<bool> answered = PollFor(fd_, POLLIN, Clock::now() + timeout);
  if (!answered.ok()) return Broken(answered.status());
  if (*answered) {
    LS_ASSIGN_OR_RETURN(uint8_t answer, ReceiveValue<uint8_t>());
    if (answer == static_cast<uint8_t>(WaitResponse::kStopWaiting)) return absl::OkStatus();
    return Broken(absl::DataLossError(absl::StrCat("WAIT answered with ", answer)));
  }
  // Timed out: withdraw the WAIT. Its STOP_WAITING may cross the CANCEL_WAIT on the wire.
  LS_RETURN_IF_ERROR(Send(Writer(Query::kCancelWait).bytes()));
  LS_ASSIGN_OR_RETURN(uint8_t answer, ReceiveValue<uint8_t>());
  bool all_there = false;
  if (answer == static_cast<uint8_t>(WaitResponse::kStopWaiting)) {
    all_there = true;
    LS_ASSIGN_OR_RETURN(answer, ReceiveValue<uint8_t>());
  }
  if (answer != static_cast<uint8_t>(WaitResponse::kWaitCanceled)) {
    return Broken(absl::DataLossError(absl::StrCat("CANCEL_WAIT answered with ", answer)));
  }
  if (all_there) return absl::OkStatus();
  if (keys.size() == 1) {
    return absl::DeadlineExceededError(absl::StrCat("not set within ", timeout.count(), " ms"));
  }
  std::vector<std::string> missing;
  for (const std::string& key : keys) {
    LS_RETURN_IF_ERROR(Send(Writer(Query::kCheck).Keys({key}).bytes()));
    LS_ASSIGN_OR_RETURN(uint8_t present, ReceiveValue<uint8_t>());
    if (present != static_cast<uint8_t>(CheckResponse::kReady)) missing.push_back(key);
  }
  return absl::DeadlineExceededError(
      absl::StrCat("waited ", timeout.count(), " ms; still missing: ", QuoteKeys(missing)));
}

absl::StatusOr<bool> TcpStore::Check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  absl::StatusOr<bool> ready = [&]() -> absl::StatusOr<bool> {
    LS_RETURN_IF_ERROR(Usable());
    LS_RETURN_IF_ERROR(CheckKeys(keys));
    LS_RETURN_IF_ERROR(Send(Writer(Query::kCheck).Keys(keys).bytes()));
    LS_ASSIGN_OR_RETURN(uint8_t answer, ReceiveValue<uint8_t>());
    if (answer == static_cast<uint8_t>(CheckResponse::kReady)) return true;
    if (answer == static_cast<uint8_t>(CheckResponse::kNotReady)) return false;
    return Broken(absl::DataLossError(absl::StrCat("CHECK answered with ", answer)));
  }();
  if (ready.ok()) return ready;
  return Named(ready.status(), absl::StrCat("Check ", QuoteKeys(keys)));
}

absl::StatusOr<std::string> TcpStore::CompareSet(const std::string& key,
                                                 const std::string& expected,
                                                 const std::string& desired) {
  std::lock_guard<std::mutex> lock(mutex_);
  absl::StatusOr<std::string> value = [&]() -> absl::StatusOr<std::string> {
    LS_RETURN_IF_ERROR(Usable());
    LS_RETURN_IF_ERROR(CheckKey(key));
    LS_RETURN_IF_ERROR(CheckValue(expected));
    LS_RETURN_IF_ERROR(CheckValue(desired));
    LS_RETURN_IF_ERROR(
        Send(Writer(Query::kCompareSet).Key(key).Bytes(expected).Bytes(desired).bytes()));
    return ReceiveBytes();
  }();
  if (value.ok()) return value;
  return Named(value.status(), absl::StrCat("CompareSet '", key, "'"));
}

absl::StatusOr<bool> TcpStore::DeleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  absl::StatusOr<bool> deleted = [&]() -> absl::StatusOr<bool> {
    LS_RETURN_IF_ERROR(Usable());
    LS_RETURN_IF_ERROR(CheckKey(key));
    LS_RETURN_IF_ERROR(Send(Writer(Query::kDeleteKey).Key(key).bytes()));
    LS_ASSIGN_OR_RETURN(int64_t count, ReceiveValue<int64_t>());
    return count > 0;
  }();
  if (deleted.ok()) return deleted;
  return Named(deleted.status(), absl::StrCat("DeleteKey '", key, "'"));
}

}  // namespace lockstep::parallel
