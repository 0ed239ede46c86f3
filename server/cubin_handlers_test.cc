#include "server/cubin_handlers.h"

#include <gtest/gtest.h>

namespace warpscope::server {
namespace {

// Only instruction frames name cubins; a native frame's build id that looks
// like one does not.
TEST(CubinHandlersTest, TheCubinsOfABatchAreItsInstructionFramesBuildIds) {
  const std::string a(32, 'a'), b(32, 'b'), native(32, 'c');
  v1::IngestBatch batch;
  for (const std::string& s : {std::string(), a, b, native, std::string("cubin"), std::string("not-a-hash")}) {
    batch.add_strings(s);
  }
  auto mapping = [&](uint32_t build_id) {
    v1::Mapping* m = batch.add_mappings();
    m->set_filename(4);
    m->set_build_id(build_id);
    return static_cast<uint32_t>(batch.mappings_size());
  };
  const uint32_t ma = mapping(1), mb = mapping(2), mn = mapping(3), bad = mapping(5);
  auto location = [&](uint32_t m, v1::FrameKind kind) {
    v1::Location* l = batch.add_locations();
    l->set_mapping(m);
    l->set_kind(kind);
  };
  location(ma, v1::FRAME_KIND_GPU_INSTRUCTION);
  location(mb, v1::FRAME_KIND_GPU_INSTRUCTION);
  location(ma, v1::FRAME_KIND_GPU_INSTRUCTION);
  location(mn, v1::FRAME_KIND_NATIVE);
  location(bad, v1::FRAME_KIND_GPU_INSTRUCTION);
  location(0, v1::FRAME_KIND_GPU_INSTRUCTION);
  EXPECT_EQ(CubinHashesOf(batch), (std::vector<std::string>{a, b}));
}

}  // namespace
}  // namespace warpscope::server
