#pragma once

#include <string>

#include "graph/graph.h"
#include "graph/graph.pb.h"

namespace lockstep {

// The graph as graph.proto, fingerprint included.
proto::GraphDef ToProto(const Graph& graph);
// 16 hex digits identifying a compiled graph: FNV-1a 64 of the deterministic serialization of
// its GraphDef (fingerprint field empty). Equal graphs give equal fingerprints on every rank.
// The plan's workspace is left out: oneDNN's scratchpads grow with the threads, which may differ
// between ranks (hosts with other core counts or rank counts) and between runs.
std::string Fingerprint(const Graph& graph);
std::string Fingerprint(const proto::GraphDef& graph);
// Whether `graph` carries its own fingerprint (also as saved by builds that hashed the
// workspace).
bool IsOwnFingerprint(const proto::GraphDef& graph);

}  // namespace lockstep
