// emit/chakra_names.h, the one copy of the Chakra names (the validator reads
// it too), against the enums protoc generated from core/emit/chakra.proto.
#include <doctest/doctest.h>

#include <string>

#include "chakra.pb.h"
#include "emit/chakra_names.h"

TEST_CASE("chakra names: node and collective types spell the schema's enum values") {
  for (int t = ChakraProtoMsg::NodeType_MIN; t <= ChakraProtoMsg::NodeType_MAX; ++t) {
    CAPTURE(t);
    REQUIRE(sc::chakra::node_type_name(t) != nullptr);
    CHECK(sc::chakra::node_type_name(t) == ChakraProtoMsg::NodeType_Name(static_cast<ChakraProtoMsg::NodeType>(t)));
  }
  CHECK(sc::chakra::node_type_name(ChakraProtoMsg::NodeType_MAX + 1) == nullptr);
  CHECK(sc::chakra::node_type_name(-1) == nullptr);
  for (int t = ChakraProtoMsg::CollectiveCommType_MIN; t <= ChakraProtoMsg::CollectiveCommType_MAX; ++t) {
    CAPTURE(t);
    REQUIRE(sc::chakra::comm_type_name(t) != nullptr);
    CHECK(sc::chakra::comm_type_name(t) ==
          ChakraProtoMsg::CollectiveCommType_Name(static_cast<ChakraProtoMsg::CollectiveCommType>(t)));
  }
  CHECK(sc::chakra::comm_type_name(ChakraProtoMsg::CollectiveCommType_MAX + 1) == nullptr);
  // Written: the four node kinds ASTRA-sim's analytical backend runs.
  int written = 0;
  for (int t = -1; t <= 9; ++t) written += sc::chakra::is_written_node_type(t);
  CHECK(written == 4);
  CHECK(sc::chakra::is_written_node_type(ChakraProtoMsg::COMM_COLL_NODE));
  CHECK_FALSE(sc::chakra::is_written_node_type(ChakraProtoMsg::METADATA_NODE));
}
