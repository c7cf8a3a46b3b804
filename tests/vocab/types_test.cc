// Pins the names, parsing and hashing of the shared vocabulary types.
#include "vocab/types.hpp"

#include <gtest/gtest.h>

namespace ccltune {
namespace {

TEST(Vocab, CollNamesRoundTrip) {
  for (int i = 0; i < kNumColls; ++i) {
    Coll c = static_cast<Coll>(i);
    ASSERT_EQ(ParseColl(CollName(c)), c);
  }
  EXPECT_EQ(ParseColl("all_reduce"), Coll::kAllReduce);
  EXPECT_EQ(ParseColl("reduce_scatter"), Coll::kReduceScatter);
  EXPECT_EQ(ParseColl("allreduc"), std::nullopt);  // a typo is an error, never all-reduce
}

TEST(Vocab, AlgoProtoDtype) {
  EXPECT_EQ(ParseAlgo("Ring"), kAlgoRing);
  EXPECT_EQ(ParseProto("LL128"), kProtoLL128);
  EXPECT_EQ(ParseProto("bogus"), std::nullopt);
  EXPECT_EQ(ParseDtype("bf16"), 9);
  EXPECT_EQ(DtypeSize(9), 2);
  EXPECT_EQ(DtypeSize(7), 4);
  EXPECT_EQ(DtypeName(7), "float32");
}

TEST(Vocab, ConfigToString) {
  EXPECT_EQ(Config{}.ToString(), "default");
  EXPECT_TRUE(Config{}.IsDefault());
  Config c{kAlgoRing, kProtoLL128, 16, 0};
  EXPECT_EQ(c.ToString(), "ring/ll128/nc16");
  EXPECT_EQ(c.Subspace(), kAlgoRing * kNumProtos + kProtoLL128);
}

TEST(Vocab, WorkloadHashIsStableAndDistinguishes) {
  WorkloadKey a{{CallDesc{Coll::kAllReduce, 7, 0, 1 << 20}}, false};
  WorkloadKey b = a;
  EXPECT_EQ(a.Hash(), b.Hash());
  b.calls[0].bytes += 4;
  EXPECT_NE(a.Hash(), b.Hash());
  WorkloadKey g = a;
  g.grouped = true;
  EXPECT_NE(a.Hash(), g.Hash());
  // Pinned value: the hash must not change between builds (exports and payloads rely on it).
  EXPECT_EQ(a.Hash(), 1086636830017406161ull);
  EXPECT_EQ(a.ToString(), "allreduce/float32/sum/1048576");
}

TEST(Vocab, TunerBytes) {
  CallDesc ag{Coll::kAllGather, 7, -1, 1024};
  EXPECT_EQ(NcclTunerBytes(ag, 4), 4096u);
  CallDesc ar{Coll::kAllReduce, 7, 0, 1024};
  EXPECT_EQ(NcclTunerBytes(ar, 4), 1024u);
}

}  // namespace
}  // namespace ccltune
