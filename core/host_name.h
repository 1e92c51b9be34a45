#pragma once

#include <string>

namespace lockstep {

// This host's name (gethostname, what `hostname` prints and Open MPI's MPI_Get_processor_name
// gives), for messages, lock records, job ids and file names. "unknown" where the system has
// none: one word, so that it survives the space-separated lock record (ckpt/lock.cc), and not
// "localhost", which on a disk shared between hosts would name the reader's host.
std::string HostName();

}  // namespace lockstep
