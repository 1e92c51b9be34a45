// The server of parallel/tcp_store.h: one thread, poll() over the listening socket and every
// connection, requests parsed from what has arrived and answered when whole.

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <set>
#include <unordered_map>

#include "absl/memory/memory.h"
#include "parallel/tcp_store.h"
#include "parallel/tcp_store_wire.h"

namespace lockstep::parallel {
namespace {

using tcp_store_wire::CheckResponse;
using tcp_store_wire::ErrnoText;
using tcp_store_wire::kMaxKeyBytes;
using tcp_store_wire::kMaxKeyCount;
using tcp_store_wire::kMaxValueBytes;
using tcp_store_wire::kValidationMagic;
using tcp_store_wire::Query;
using tcp_store_wire::Reader;
using tcp_store_wire::WaitResponse;
using tcp_store_wire::Writer;

enum class Outcome { kDone, kIncomplete, kClose };

}  // namespace

class TcpStoreServer::Loop {
 public:
  Loop(int listen_fd, int stop_read, int stop_write)
      : listen_fd_(listen_fd), stop_read_(stop_read), stop_write_(stop_write) {}
  ~Loop() {
    for (const auto& [fd, connection] : connections_) ::close(fd);
    ::close(listen_fd_);
    ::close(stop_read_);
    ::close(stop_write_);
  }
  void Run();
  void Stop() {
    const char byte = 0;
    while (::write(stop_write_, &byte, 1) < 0 && errno == EINTR) {
    }
  }

 private:
  struct Connection {
    std::string in;   // received bytes that do not yet make a whole request
    std::string out;  // answers not yet sent
    bool validated = false;
    std::set<std::string> awaited;  // the keys its pending WAIT still lacks
  };

  void Accept();
  bool Receive(int fd, Connection& connection, bool* closed);
  bool Flush(int fd, Connection& connection);
  bool HandleRequests(int fd, Connection& connection);
  Outcome Handle(int fd, Connection& connection, Reader& reader);
  Outcome HandleWait(int fd, Connection& connection, Reader& reader);
  Outcome HandleUpdate(Query query, Connection& connection, Reader& reader);
  Outcome HandleAdd(Connection& connection, Reader& reader);
  Outcome HandleLookup(Query query, Connection& connection, Reader& reader);
  void Store(const std::string& key, std::string value);
  void ForgetWait(int fd, Connection& connection);
  void Close(int fd);

  const int listen_fd_;
  const int stop_read_;
  const int stop_write_;
  std::map<int, Connection> connections_;
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<std::string, std::vector<int>> waiters_;  // key -> connections awaiting it
};

void TcpStoreServer::Loop::Run() {
  std::vector<pollfd> fds;
  while (true) {
    fds.clear();
    fds.push_back({stop_read_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& [fd, connection] : connections_) {
      fds.push_back({fd, static_cast<short>(POLLIN | (connection.out.empty() ? 0 : POLLOUT)), 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;  // cannot happen with valid descriptors; the clients see the sockets close
    }
    if (fds[0].revents != 0) return;
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const int fd = fds[i].fd;
      Connection& connection = connections_.at(fd);
      bool closed = false;
      bool keep = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        keep = Receive(fd, connection, &closed) && HandleRequests(fd, connection);
      }
      // Answers to a client that is gone are dropped with it.
      if (keep && !closed) keep = Flush(fd, connection);
      if (!keep || closed) Close(fd);
    }
    if (fds[1].revents & POLLIN) Accept();
  }
}

void TcpStoreServer::Loop::Accept() {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: all taken; EMFILE and the like: taken again on the next poll
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    connections_[fd] = Connection();
  }
}

bool TcpStoreServer::Loop::Receive(int fd, Connection& connection, bool* closed) {
  char buffer[64 * 1024];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) {
      connection.in.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      *closed = true;  // the requests before the end are still served (a SET, then exit)
      return true;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return true;
    } else if (errno != EINTR) {
      return false;
    }
  }
}

bool TcpStoreServer::Loop::Flush(int fd, Connection& connection) {
  size_t sent = 0;
  while (sent < connection.out.size()) {
    const ssize_t n =
        ::send(fd, connection.out.data() + sent, connection.out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;  // the rest when poll says it can go
    } else if (errno != EINTR) {
      return false;
    }
  }
  connection.out.erase(0, sent);
  return true;
}

bool TcpStoreServer::Loop::HandleRequests(int fd, Connection& connection) {
  Reader reader(connection.in);
  size_t done = 0;
  while (done < connection.in.size()) {
    const Outcome outcome = Handle(fd, connection, reader);
    if (outcome == Outcome::kClose) return false;
    if (outcome == Outcome::kIncomplete) break;
    done = reader.pos();
  }
  connection.in.erase(0, done);
  return true;
}

// Parses one whole request before acting on it, so that an incomplete one changes nothing.
Outcome TcpStoreServer::Loop::Handle(int fd, Connection& connection, Reader& reader) {
  const Outcome more = Outcome::kIncomplete;
  uint8_t type = 0;
  if (!reader.Value(&type)) return more;
  const Query query = static_cast<Query>(type);
  if (!connection.validated || query == Query::kValidate) {
    uint32_t magic = 0;
    if (query != Query::kValidate) return Outcome::kClose;
    if (!reader.Value(&magic)) return more;
    if (magic != kValidationMagic) return Outcome::kClose;
    connection.validated = true;
    return Outcome::kDone;
  }
  switch (query) {
    case Query::kPing: {
      uint32_t nonce = 0;
      if (!reader.Value(&nonce)) return more;
      Writer answer;
      connection.out += answer.Value(nonce).bytes();
      return Outcome::kDone;
    }
    case Query::kWait:
      return HandleWait(fd, connection, reader);
    case Query::kCancelWait:
      ForgetWait(fd, connection);
      connection.out += static_cast<char>(WaitResponse::kWaitCanceled);
      return Outcome::kDone;
    case Query::kGetNumKeys:
      connection.out += Writer().Value<int64_t>(static_cast<int64_t>(values_.size())).bytes();
      return Outcome::kDone;
    case Query::kAdd:
      return HandleAdd(connection, reader);
    case Query::kSet:
    case Query::kAppend:
    case Query::kMultiSet:
    case Query::kCompareSet:
      return HandleUpdate(query, connection, reader);
    default:
      return HandleLookup(query, connection, reader);
  }
}

Outcome TcpStoreServer::Loop::HandleWait(int fd, Connection& connection, Reader& reader) {
  std::vector<std::string> keys;
  if (!reader.Keys(&keys)) return reader.bad() ? Outcome::kClose : Outcome::kIncomplete;
  if (!connection.awaited.empty()) return Outcome::kClose;  // a client waits for one thing
  for (const std::string& key : keys) {
    if (values_.count(key) == 0 && connection.awaited.insert(key).second) {
      waiters_[key].push_back(fd);
    }
  }
  if (connection.awaited.empty()) connection.out += static_cast<char>(WaitResponse::kStopWaiting);
  return Outcome::kDone;
}

// SET, APPEND, MULTI_SET, COMPARE_SET: the requests that change values.
Outcome TcpStoreServer::Loop::HandleUpdate(Query query, Connection& connection, Reader& reader) {
  auto failed = [&reader] { return reader.bad() ? Outcome::kClose : Outcome::kIncomplete; };
  std::string key;
  std::string value;
  if (query == Query::kMultiSet) {
    uint64_t count = 0;
    if (!reader.Value(&count)) return Outcome::kIncomplete;
    if (count > kMaxKeyCount) return Outcome::kClose;
    std::vector<std::pair<std::string, std::string>> pairs(count);
    for (auto& [k, v] : pairs) {
      if (!reader.Bytes(&k, kMaxKeyBytes) || !reader.Bytes(&v, kMaxValueBytes)) return failed();
    }
    for (auto& [k, v] : pairs) Store(k, std::move(v));
    return Outcome::kDone;
  }
  if (!reader.Bytes(&key, kMaxKeyBytes) || !reader.Bytes(&value, kMaxValueBytes)) return failed();
  auto found = values_.find(key);
  if (query == Query::kSet) {
    Store(key, std::move(value));
  } else if (query == Query::kAppend) {
    Store(key, found == values_.end() ? value : found->second + value);
  } else {  // COMPARE_SET
    std::string desired;
    if (!reader.Bytes(&desired, kMaxValueBytes)) return failed();
    // torch's rule: an absent key counts as "" and, expected otherwise, stays absent while the
    // expected value is answered.
    const bool matches = found == values_.end() ? value.empty() : found->second == value;
    if (matches) Store(key, std::move(desired));
    found = values_.find(key);
    connection.out += Writer().Bytes(found == values_.end() ? value : found->second).bytes();
  }
  return Outcome::kDone;
}

Outcome TcpStoreServer::Loop::HandleAdd(Connection& connection, Reader& reader) {
  std::string key;
  int64_t sum = 0;
  if (!reader.Bytes(&key, kMaxKeyBytes) || !reader.Value(&sum)) {
    return reader.bad() ? Outcome::kClose : Outcome::kIncomplete;
  }
  auto found = values_.find(key);
  if (found != values_.end()) {
    const std::string& text = found->second;
    int64_t old = 0;
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), old);
    // A counter that is not a decimal integer: torch drops the connection as well.
    if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) {
      return Outcome::kClose;
    }
    if (__builtin_add_overflow(sum, old, &sum)) return Outcome::kClose;
  }
  Store(key, std::to_string(sum));  // decimal text, as torch stores counters
  connection.out += Writer().Value<int64_t>(sum).bytes();
  return Outcome::kDone;
}

// GET, MULTI_GET, CHECK, DELETE_KEY; anything else ends the connection.
Outcome TcpStoreServer::Loop::HandleLookup(Query query, Connection& connection, Reader& reader) {
  auto failed = [&reader] { return reader.bad() ? Outcome::kClose : Outcome::kIncomplete; };
  std::vector<std::string> keys;
  Writer answer;
  switch (query) {
    case Query::kGet:  // an absent key is answered with no bytes, as torch's libuv server does
    case Query::kMultiGet:
      keys.resize(1);
      if (query == Query::kGet ? !reader.Bytes(&keys[0], kMaxKeyBytes) : !reader.Keys(&keys)) {
        return failed();
      }
      for (const std::string& key : keys) {
        auto found = values_.find(key);
        answer.Bytes(found == values_.end() ? absl::string_view() : found->second);
      }
      break;
    case Query::kCheck: {
      if (!reader.Keys(&keys)) return failed();
      const bool all = std::all_of(keys.begin(), keys.end(),
                                   [&](const std::string& key) { return values_.count(key) > 0; });
      answer.Value(all ? CheckResponse::kReady : CheckResponse::kNotReady);
      break;
    }
    case Query::kDeleteKey:
      keys.resize(1);
      if (!reader.Bytes(&keys[0], kMaxKeyBytes)) return failed();
      answer.Value<int64_t>(static_cast<int64_t>(values_.erase(keys[0])));
      break;
    default:
      return Outcome::kClose;  // a query this server does not know (torch's queues, a newer one)
  }
  connection.out += answer.bytes();
  return Outcome::kDone;
}

// Stores a value and answers every WAIT that lacked only this key.
void TcpStoreServer::Loop::Store(const std::string& key, std::string value) {
  values_[key] = std::move(value);
  auto waiting = waiters_.find(key);
  if (waiting == waiters_.end()) return;
  for (int fd : waiting->second) {
    Connection& connection = connections_.at(fd);
    connection.awaited.erase(key);
    if (connection.awaited.empty()) {
      connection.out += static_cast<char>(WaitResponse::kStopWaiting);  // sent by the poll loop
    }
  }
  waiters_.erase(waiting);
}

void TcpStoreServer::Loop::ForgetWait(int fd, Connection& connection) {
  for (const std::string& key : connection.awaited) {
    auto waiting = waiters_.find(key);
    if (waiting == waiters_.end()) continue;
    std::erase(waiting->second, fd);
    if (waiting->second.empty()) waiters_.erase(waiting);
  }
  connection.awaited.clear();
}

void TcpStoreServer::Loop::Close(int fd) {
  ForgetWait(fd, connections_.at(fd));
  connections_.erase(fd);
  ::close(fd);
}

namespace {

absl::Status CannotServe(int port, int error) {
  if (error == EADDRINUSE) {
    return absl::AlreadyExistsError(absl::StrCat(
        "cannot serve the rendezvous store on port ", port,
        ": the port is in use (another store or job listens there); choose another, or 0 for "
        "a free one"));
  }
  return absl::UnavailableError(
      absl::StrCat("cannot serve the rendezvous store on port ", port, ": ", ErrnoText(error)));
}

// A listening socket on every address of this host: IPv6 with IPv4 mapped where the host has
// IPv6 (as torch's server), else IPv4.
absl::StatusOr<int> Listen(int port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int error = 0;
  const int one = 1;
  const int zero = 0;
  if (fd >= 0) {
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<uint16_t>(port));
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    // A restarted job may take the port again while the last one's connections linger.
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) return fd;
    error = errno;
    ::close(fd);
    fd = -1;
  }
  if (error == 0 || error == EADDRNOTAVAIL || error == EAFNOSUPPORT) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", ErrnoText(errno)));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) return fd;
    error = errno;
    ::close(fd);
  }
  return CannotServe(port, error);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(int port) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous store port ", port, ": expected 0 (any free port) to 65535"));
  }
  LS_ASSIGN_OR_RETURN(const int fd, Listen(port));
  sockaddr_storage bound{};
  socklen_t size = sizeof(bound);
  int pipe_fds[2];
  if (::listen(fd, SOMAXCONN) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0 ||
      ::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    return CannotServe(port, error);
  }
  const int bound_port = bound.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                             : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  return absl::WrapUnique(
      new TcpStoreServer(bound_port, std::make_unique<Loop>(fd, pipe_fds[0], pipe_fds[1])));
}

TcpStoreServer::TcpStoreServer(int port, std::unique_ptr<Loop> loop)
    : port_(port), loop_(std::move(loop)), thread_([this] { loop_->Run(); }) {}

TcpStoreServer::~TcpStoreServer() {
  loop_->Stop();
  thread_.join();
}

}  // namespace lockstep::parallel
