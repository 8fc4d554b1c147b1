#include "hilo/ir/shared_shape.h"

#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace hilo {
namespace {

TEST(SharedShapeTest, DefaultIsTheDefaultShape) {
  SharedShape a;
  SharedShape b;
  EXPECT_EQ(*a, Shape());
  EXPECT_TRUE(a.SharesWith(b));
}

TEST(SharedShapeTest, CopiesShareAndMovesTransfer) {
  SharedShape a(Shape::MakeArray(PrimitiveType::F32, {2, 3}));
  SharedShape b = a;
  EXPECT_TRUE(a.SharesWith(b));
  SharedShape c = std::move(b);
  EXPECT_TRUE(c.SharesWith(a));
  EXPECT_EQ(*b, Shape());  // a moved-from handle is the default shape
  EXPECT_EQ(c->dimensions(1), 3);
}

TEST(SharedShapeTest, MutableCopiesOnlyWhenShared) {
  SharedShape a(Shape::MakeArray(PrimitiveType::F32, {2, 3}));
  const Shape* before = &*a;
  EXPECT_EQ(a.Mutable(), before);  // only handle: changed in place

  SharedShape b = a;
  a.Mutable()->set_dimensions(0, 9);
  EXPECT_FALSE(a.SharesWith(b));
  EXPECT_EQ(a->dimensions(0), 9);
  EXPECT_EQ(b->dimensions(0), 2);
  EXPECT_EQ(&*b, before);

  // The default shape is shared by every default handle: never changed in place.
  SharedShape d;
  d.Mutable()->set_element_type(PrimitiveType::TOKEN);
  EXPECT_TRUE(d->IsToken());
  EXPECT_EQ(*SharedShape(), Shape());
}

TEST(SharedShapeTest, AssignmentReleasesTheOldShape) {
  SharedShape a(Shape::MakeArray(PrimitiveType::F32, {2}));
  SharedShape b(Shape::MakeArray(PrimitiveType::S32, {4}));
  SharedShape keep = a;
  a = b;
  EXPECT_TRUE(a.SharesWith(b));
  EXPECT_EQ(keep->element_type(), PrimitiveType::F32);
  a = a;  // self-assignment keeps the shape
  EXPECT_EQ(a->element_type(), PrimitiveType::S32);
  // The last handle of `keep`'s shape: changed in place, not copied.
  const Shape* kept = &*keep;
  EXPECT_EQ(keep.Mutable(), kept);
}

// Handles to one shape are copied and dropped on several threads at once
// (the verifier reads a module while it is printed): the count must stay
// exact, which ASan (a double free or a leak) and TSan see otherwise.
TEST(SharedShapeTest, HandlesMayBeCopiedOnSeveralThreads) {
  SharedShape shared(Shape::MakeTuple({Shape::MakeArray(PrimitiveType::F32, {2}), Shape::MakeToken()}));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < 20000; ++i) {
        SharedShape copy = shared;
        SharedShape again = copy;
        ASSERT_EQ(again->tuple_shapes_size(), 2);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Only `shared` is left: a change is made in place.
  const Shape* before = &*shared;
  EXPECT_EQ(shared.Mutable(), before);
}

}  // namespace
}  // namespace hilo
