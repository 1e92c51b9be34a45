// lockstep-test-store-client: drives parallel/tcp_store.h from the command line for
// tcp_store_interop_test.py, against PyPI torch's TCPStore.
//
//   lockstep-test-store-client serve
//     Serves a store on a free port, prints "port N", and serves until stdin closes.
//   lockstep-test-store-client HOST PORT TIMEOUT_MS OP...
//     Connects and runs each OP, printing one line for each:
//       set KEY VALUE          set KEY
//       get KEY                get KEY = VALUE
//       add KEY DELTA          add KEY = SUM
//       wait KEY[,KEY...]      wait ok
//       check KEY[,KEY...]     check = true|false
//       delete KEY             delete KEY = true|false
//       cas KEY OLD NEW        cas KEY = VALUE
//       get-times-out KEY      timed out: MESSAGE   (the connection is used on afterwards)
//       wait-times-out KEYS    timed out: MESSAGE
// Any other error: "error: MESSAGE" on stderr, exit status 1.

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "parallel/tcp_store.h"

namespace {

using lockstep::parallel::TcpStore;
using lockstep::parallel::TcpStoreServer;

int Fail(const absl::Status& status) {
  std::cerr << "error: " << status.message() << std::endl;
  return 1;
}

int Serve() {
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> server = TcpStoreServer::Start(0);
  if (!server.ok()) return Fail(server.status());
  std::cout << "port " << (*server)->port() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}

// Runs the op at args[i], advancing i past its arguments.
absl::Status RunOp(TcpStore& store, const std::vector<std::string>& args, size_t& i) {
  const std::string& op = args[i++];
  auto next = [&]() -> absl::StatusOr<std::string> {
    if (i >= args.size()) return absl::InvalidArgumentError("'" + op + "' lacks an argument");
    return args[i++];
  };
  LS_ASSIGN_OR_RETURN(const std::string key, next());
  const std::vector<std::string> keys = absl::StrSplit(key, ',');
  if (op == "set") {
    LS_ASSIGN_OR_RETURN(const std::string value, next());
    LS_RETURN_IF_ERROR(store.Set(key, value));
    std::cout << "set " << key << "\n";
  } else if (op == "get") {
    LS_ASSIGN_OR_RETURN(const std::string value, store.Get(key));
    std::cout << "get " << key << " = " << value << "\n";
  } else if (op == "add") {
    LS_ASSIGN_OR_RETURN(const std::string delta, next());
    LS_ASSIGN_OR_RETURN(const int64_t sum, store.Add(key, std::stoll(delta)));
    std::cout << "add " << key << " = " << sum << "\n";
  } else if (op == "wait") {
    LS_RETURN_IF_ERROR(store.Wait(keys));
    std::cout << "wait ok\n";
  } else if (op == "check") {
    LS_ASSIGN_OR_RETURN(const bool ready, store.Check(keys));
    std::cout << "check = " << (ready ? "true" : "false") << "\n";
  } else if (op == "delete") {
    LS_ASSIGN_OR_RETURN(const bool deleted, store.DeleteKey(key));
    std::cout << "delete " << key << " = " << (deleted ? "true" : "false") << "\n";
  } else if (op == "cas") {
    LS_ASSIGN_OR_RETURN(const std::string expected, next());
    LS_ASSIGN_OR_RETURN(const std::string desired, next());
    LS_ASSIGN_OR_RETURN(const std::string value, store.CompareSet(key, expected, desired));
    std::cout << "cas " << key << " = " << value << "\n";
  } else if (op == "get-times-out" || op == "wait-times-out") {
    const absl::Status status = op == "get-times-out" ? store.Get(key).status() : store.Wait(keys);
    if (!absl::IsDeadlineExceeded(status)) {
      return absl::FailedPreconditionError("expected a timeout, got: " + status.ToString());
    }
    std::cout << "timed out: " << status.message() << "\n";
  } else {
    return absl::InvalidArgumentError("unknown op '" + op + "'");
  }
  std::cout.flush();
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "serve") return Serve();
  if (args.size() < 3) {
    std::cerr << "usage: lockstep-test-store-client serve | HOST PORT TIMEOUT_MS OP...\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<TcpStore>> store = TcpStore::Connect(
      args[0], std::atoi(args[1].c_str()), std::chrono::milliseconds(std::atoll(args[2].c_str())));
  if (!store.ok()) return Fail(store.status());
  for (size_t i = 3; i < args.size();) {
    const absl::Status status = RunOp(**store, args, i);
    if (!status.ok()) return Fail(status);
  }
  return 0;
}
