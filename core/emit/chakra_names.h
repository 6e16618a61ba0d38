// The Chakra names (schema 0.0.4, core/emit/chakra.proto): attribute names,
// node types and collective types, as the simulator spells them. The one
// copy: the writer, the reader, the dump and the validator
// (check/validate.cc) all read them here. Without protobuf types, so layers
// above emit/ may include it; implemented in chakra_schema.cc.
#pragma once

#include <cstdint>

namespace sc::chakra {

inline constexpr char kVersion[] = "0.0.4";

// Attribute names, exactly as the simulator looks them up.
namespace attr {
inline constexpr char kGenerator[] = "generator";
inline constexpr char kGeneratorVersion[] = "generator_version";
inline constexpr char kConfigHash[] = "config_hash";
inline constexpr char kRank[] = "rank";
inline constexpr char kWorldSize[] = "world_size";

inline constexpr char kIsCpuOp[] = "is_cpu_op";
inline constexpr char kNumOps[] = "num_ops";
inline constexpr char kTensorSize[] = "tensor_size";
inline constexpr char kCommType[] = "comm_type";
inline constexpr char kCommSize[] = "comm_size";
inline constexpr char kCommSrc[] = "comm_src";
inline constexpr char kCommDst[] = "comm_dst";
inline constexpr char kCommTag[] = "comm_tag";
inline constexpr char kCommPriority[] = "comm_priority";
inline constexpr char kPgName[] = "pg_name";
inline constexpr char kInvolvedDim[] = "involved_dim";
// ASTRA-sim local-memory tracking: string lists of alternating tensor name
// and size in bytes (docs/trace-format.md).
inline constexpr char kInputs[] = "inputs";
inline constexpr char kOutputs[] = "outputs";
}  // namespace attr

// NodeType's name ("INVALID_NODE" ... "COMM_COLL_NODE") for every value
// of the enum; nullptr outside it.
const char* node_type_name(int type);

// The node types stagecraft writes and reads: COMP_NODE, COMM_SEND_NODE,
// COMM_RECV_NODE, COMM_COLL_NODE.
bool is_written_node_type(int type);

// "ALL_REDUCE", "REDUCE", ... for every CollectiveCommType; nullptr for a
// value outside the enum.
const char* comm_type_name(int64_t type);

// True for the collectives the simulator runs (the CollectiveType values).
bool is_supported_collective(int64_t type);

}  // namespace sc::chakra
