#pragma once

#include <string>

#include "graph/graph.h"
#include "graph/graph.pb.h"

namespace lockstep {

// The graph as graph.proto, fingerprint included.
proto::GraphDef ToProto(const Graph& graph);
// 16 hex digits identifying a compiled graph: FNV-1a 64 of the deterministic serialization of
// its GraphDef (fingerprint field empty). Equal graphs give equal fingerprints on every rank.
std::string Fingerprint(const Graph& graph);
std::string Fingerprint(const proto::GraphDef& graph);

}  // namespace lockstep
