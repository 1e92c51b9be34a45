// The rendezvous store's client against its server (parallel/tcp_store.h). The same client
// against PyPI torch's server, and torch's client against this server, are the interop test
// (tcp_store_interop_test.py).

#include "parallel/tcp_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace lockstep::parallel {
namespace {

using std::chrono::milliseconds;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::unique_ptr<TcpStoreServer> StartServer() {
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> server = TcpStoreServer::Start(0);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

std::unique_ptr<TcpStore> ConnectTo(const TcpStoreServer& server,
                                    milliseconds timeout = milliseconds(10000)) {
  absl::StatusOr<std::unique_ptr<TcpStore>> store =
      TcpStore::Connect("127.0.0.1", server.port(), timeout);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

// A port that nothing listens on: one a server had a moment ago.
int ClosedPort() { return StartServer()->port(); }

TEST(TcpStoreTest, SetThenGetFromAnotherClient) {
  auto server = StartServer();
  auto writer = ConnectTo(*server);
  auto reader = ConnectTo(*server);
  ASSERT_TRUE(writer->Set("nccl_id", "abc").ok());
  absl::StatusOr<std::string> value = reader->Get("nccl_id");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "abc");
}

TEST(TcpStoreTest, ValuesAreBytes) {
  auto server = StartServer();
  auto store = ConnectTo(*server);
  const std::string bytes("\0\xff\n\x01 end", 7);
  ASSERT_TRUE(store->Set("binary", bytes).ok());
  ASSERT_TRUE(store->Set("empty", "").ok());
  EXPECT_EQ(store->Get("binary").value(), bytes);
  EXPECT_EQ(store->Get("empty").value(), "");
  ASSERT_TRUE(store->Set("binary", "overwritten").ok());
  EXPECT_EQ(store->Get("binary").value(), "overwritten");
}

TEST(TcpStoreTest, GetWaitsForAKeySetLater) {
  auto server = StartServer();
  auto reader = ConnectTo(*server);
  std::thread late([&] {
    auto writer = ConnectTo(*server);
    std::this_thread::sleep_for(milliseconds(200));
    ASSERT_TRUE(writer->Set("late", "here").ok());
  });
  absl::StatusOr<std::string> value = reader->Get("late");
  late.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "here");
}

TEST(TcpStoreTest, GetTimesOutNamingTheKeyAndTheAddressThenTheClientGoesOn) {
  auto server = StartServer();
  auto store = ConnectTo(*server, milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> value = store->Get("never_set");
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
  EXPECT_TRUE(absl::IsDeadlineExceeded(value.status())) << value.status();
  EXPECT_THAT(value.status().message(), AllOf(HasSubstr(absl::StrCat("127.0.0.1:", server->port())),
                                              HasSubstr("'never_set'"), HasSubstr("300 ms")));
  // The cancelled WAIT left the connection in step.
  ASSERT_TRUE(store->Set("after", "1").ok());
  EXPECT_EQ(store->Get("after").value(), "1");
}

TEST(TcpStoreTest, WaitForKeysSetByManyClients) {
  auto server = StartServer();
  auto waiter = ConnectTo(*server);
  constexpr int kRanks = 8;
  std::vector<std::string> keys;
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    keys.push_back(absl::StrCat("rank", rank));
    ranks.emplace_back([&, rank] {
      auto store = ConnectTo(*server);
      std::this_thread::sleep_for(milliseconds(10 * rank));
      ASSERT_TRUE(store->Set(absl::StrCat("rank", rank), "up").ok());
    });
  }
  const absl::Status waited = waiter->Wait(keys);
  for (std::thread& rank : ranks) rank.join();
  EXPECT_TRUE(waited.ok()) << waited;
  EXPECT_TRUE(waiter->Check(keys).value());
}

TEST(TcpStoreTest, WaitTimeoutNamesTheMissingKeys) {
  auto server = StartServer();
  auto store = ConnectTo(*server);
  ASSERT_TRUE(store->Set("rank0", "up").ok());
  const absl::Status status = store->Wait({"rank0", "rank1", "rank2"}, milliseconds(200));
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("still missing: 'rank1', 'rank2'"));
  EXPECT_TRUE(store->Wait({"rank0"}, milliseconds(200)).ok());
}

TEST(TcpStoreTest, AddCountsAcrossThreadsAndClients) {
  auto server = StartServer();
  auto shared = ConnectTo(*server);  // one client used by several threads at once
  auto other = ConnectTo(*server);
  constexpr int kAdds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      TcpStore& store = t == 0 ? *other : *shared;
      for (int i = 0; i < kAdds; ++i) ASSERT_TRUE(store.Add("arrived", 1).ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(shared->Add("arrived", 0).value(), 4 * kAdds);
  EXPECT_EQ(shared->Add("arrived", -5).value(), 4 * kAdds - 5);
  EXPECT_EQ(other->Get("arrived").value(), std::to_string(4 * kAdds - 5));  // decimal, as torch
  EXPECT_EQ(shared->Add("fresh", 7).value(), 7);
}

TEST(TcpStoreTest, CheckSaysWhetherEveryKeyExists) {
  auto server = StartServer();
  auto store = ConnectTo(*server);
  EXPECT_FALSE(store->Check({"a"}).value());
  ASSERT_TRUE(store->Set("a", "1").ok());
  EXPECT_TRUE(store->Check({"a"}).value());
  EXPECT_FALSE(store->Check({"a", "b"}).value());
  EXPECT_TRUE(store->Check({}).value());
}

TEST(TcpStoreTest, DeleteKeyAndCompareSet) {
  auto server = StartServer();
  auto store = ConnectTo(*server);
  EXPECT_FALSE(store->DeleteKey("absent").value());
  // Set-if-absent: the first run id wins, a second job on the port sees the first's.
  EXPECT_EQ(store->CompareSet("run_id", "", "job1").value(), "job1");
  EXPECT_EQ(store->CompareSet("run_id", "", "job2").value(), "job1");
  EXPECT_EQ(store->CompareSet("run_id", "job1", "job3").value(), "job3");
  EXPECT_EQ(store->CompareSet("absent", "x", "y").value(), "x");  // torch's rule
  EXPECT_FALSE(store->Check({"absent"}).value());
  EXPECT_TRUE(store->DeleteKey("run_id").value());
  EXPECT_FALSE(store->Check({"run_id"}).value());
}

TEST(TcpStoreTest, OversizedKeyIsRefusedBeforeSending) {
  auto server = StartServer();
  auto store = ConnectTo(*server);
  const absl::Status status = store->Set(std::string(10000, 'k'), "v");
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_TRUE(store->Set("k", "v").ok());
}

TEST(TcpStoreTest, ConnectToAClosedPortTimesOutNamingTheAddress) {
  const int port = ClosedPort();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<TcpStore>> store =
      TcpStore::Connect("127.0.0.1", port, milliseconds(300));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(store.status())) << store.status();
  EXPECT_THAT(store.status().message(),
              AllOf(HasSubstr(absl::StrCat("127.0.0.1:", port)), HasSubstr("within 300 ms"),
                    HasSubstr("Connection refused")));
  EXPECT_GE(waited, milliseconds(300));
  EXPECT_LT(waited, milliseconds(3000));
}

TEST(TcpStoreTest, ConnectWaitsForAServerThatStartsLater) {
  const int port = ClosedPort();
  std::unique_ptr<TcpStoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(milliseconds(300));
    absl::StatusOr<std::unique_ptr<TcpStoreServer>> started = TcpStoreServer::Start(port);
    ASSERT_TRUE(started.ok()) << started.status();
    server = std::move(*started);
  });
  absl::StatusOr<std::unique_ptr<TcpStore>> store =
      TcpStore::Connect("localhost", port, milliseconds(10000));
  starter.join();
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->Set("k", "v").ok());
}

TEST(TcpStoreTest, ASecondServerOnAPortInUseIsRefusedNamingThePort) {
  auto first = StartServer();
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> second = TcpStoreServer::Start(first->port());
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(),
              AllOf(HasSubstr(absl::StrCat("port ", first->port())), HasSubstr("in use")));
  // The first still serves.
  EXPECT_TRUE(ConnectTo(*first)->Set("k", "v").ok());
}

// A plain socket to the server, for requests written byte by byte.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    timeval limit{10, 0};  // a server that neither answers nor closes fails the test
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  }
  ~RawConnection() { ::close(fd_); }
  void Send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next byte, or -1 once the server has closed the connection.
  int Receive() {
    unsigned char byte = 0;
    const ssize_t n = ::recv(fd_, &byte, 1, 0);
    EXPECT_GE(n, 0) << "no answer and no close within 10 s";
    return n == 1 ? byte : -1;
  }

 private:
  int fd_;
};

// torch's framing, written out here by hand: a query byte, uint64 little-endian lengths.
std::string Framed(absl::string_view bytes) {
  std::string framed(8, '\0');
  const uint64_t size = bytes.size();
  std::memcpy(framed.data(), &size, sizeof(size));
  return framed.append(bytes.data(), bytes.size());
}
const std::string kValidate("\x00\xce\xf7\x85\x3c", 5);  // VALIDATE, 0x3C85F7CE

TEST(TcpStoreTest, ServerDropsAConnectionThatDoesNotValidateAndServesOthers) {
  auto server = StartServer();
  RawConnection http(server->port());
  http.Send("GET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(http.Receive(), -1);  // closed, no answer
  EXPECT_TRUE(ConnectTo(*server)->Add("k", 1).ok());
}

TEST(TcpStoreTest, ServerDropsAConnectionThatSendsAnUnknownQuery) {
  auto server = StartServer();
  RawConnection raw(server->port());
  raw.Send(kValidate + "\x0e" + Framed("/queue") + Framed("item"));  // QUEUE_PUSH, not served
  EXPECT_EQ(raw.Receive(), -1);
  EXPECT_TRUE(ConnectTo(*server)->Add("k", 1).ok());
}

TEST(TcpStoreTest, ServerAssemblesRequestsThatArriveByteByByte) {
  auto server = StartServer();
  RawConnection raw(server->port());
  // VALIDATE, SET "/k" = "v", CHECK ["/k"], in one stream cut into single bytes.
  const std::string requests = kValidate + "\x01" + Framed("/k") + Framed("v") + "\x05" +
                               std::string("\x01\0\0\0\0\0\0\0", 8) + Framed("/k");
  for (char byte : requests) {
    raw.Send(std::string(1, byte));
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_EQ(raw.Receive(), 0);                           // READY
  EXPECT_EQ(ConnectTo(*server)->Get("k").value(), "v");  // the client's "/" prefix, as torch's
}

TEST(TcpStoreTest, ClientsOfAStoppedServerGetErrorsNotHangs) {
  auto server = StartServer();
  auto store = ConnectTo(*server, milliseconds(30000));
  std::atomic<bool> stopped = false;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    server.reset();
    stopped = true;
  });
  const auto start = std::chrono::steady_clock::now();
  const absl::Status waited = store->Wait({"never"});  // under way when the server stops
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(10000));
  EXPECT_TRUE(absl::IsUnavailable(waited)) << waited;
  EXPECT_THAT(waited.message(), HasSubstr("closed the connection"));
  const absl::Status later = store->Set("k", "v");
  EXPECT_TRUE(absl::IsFailedPrecondition(later)) << later;
  EXPECT_THAT(later.message(), HasSubstr("earlier error"));
}

}  // namespace
}  // namespace lockstep::parallel
