// SharedShape: a Shape that the instructions having it share.
//
// A module has few distinct shapes for many instructions (mixtral: 125 for
// 41,881; the generated transformer: a dozen for 300,000), and a Shape is
// 104 bytes plus an allocation for each tuple. An instruction holds one
// SharedShape, a pointer to a reference-counted shape, and the parser hands
// the same one to every instruction whose shape is written the same. A
// shape is never changed while shared: `Mutable()` first copies it when
// another handle refers to it (copy on write), so a change made through one
// instruction is never seen through another.
//
// The count is atomic, so handles to one shape may be copied and dropped
// on different threads (the verifier reads a module on a second thread
// while it is printed). Changing the shape itself is not synchronised, as
// for any object.
#ifndef HILO_IR_SHARED_SHAPE_H_
#define HILO_IR_SHARED_SHAPE_H_

#include <atomic>
#include <cstdint>
#include <utility>

#include "hilo/ir/shape.h"

namespace hilo {

class SharedShape {
 public:
  // The default shape, Shape(): one block for the whole process, so a
  // default or moved-from handle costs no allocation.
  SharedShape() noexcept : node_(DefaultNode()) { node_->Acquire(); }
  explicit SharedShape(Shape shape) : node_(new Node(std::move(shape))) {}
  SharedShape(const SharedShape& other) noexcept : node_(other.node_) { node_->Acquire(); }
  SharedShape(SharedShape&& other) noexcept : SharedShape() { std::swap(node_, other.node_); }
  SharedShape& operator=(SharedShape other) noexcept {
    std::swap(node_, other.node_);
    return *this;
  }
  ~SharedShape() { node_->Release(); }

  const Shape& get() const { return node_->shape; }
  const Shape& operator*() const { return node_->shape; }
  const Shape* operator->() const { return &node_->shape; }

  // The shape, for changing it: copied first if another handle refers to
  // it. The pointer is valid until this handle is changed or copied.
  Shape* Mutable() {
    if (node_->refs.load(std::memory_order_acquire) != 1) {
      Node* copy = new Node(node_->shape);
      node_->Release();
      node_ = copy;
    }
    return &node_->shape;
  }

  // True if both handles refer to the same shape (not just equal ones).
  bool SharesWith(const SharedShape& other) const { return node_ == other.node_; }

 private:
  struct Node {
    Node() = default;
    explicit Node(Shape s) : shape(std::move(s)) {}
    void Acquire() { refs.fetch_add(1, std::memory_order_relaxed); }
    void Release() {
      if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    std::atomic<int64_t> refs{1};
    Shape shape;
  };
  static Node* DefaultNode() {
    // Holds a reference of its own, so it is never freed. Built in place:
    // moving an empty Shape in makes GCC 12 warn (-Wmaybe-uninitialized)
    // about the unused inline storage abseil's InlinedVector copies.
    static Node* const node = new Node();
    return node;
  }

  Node* node_;
};

}  // namespace hilo

#endif  // HILO_IR_SHARED_SHAPE_H_
