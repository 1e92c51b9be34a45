#include "core/host_name.h"

#include <unistd.h>

namespace lockstep {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

}  // namespace lockstep
