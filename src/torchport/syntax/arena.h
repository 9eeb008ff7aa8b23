// A bump allocator for syntax trees: nodes and their child arrays live in a few large blocks
// that are freed together with the Tree. Only trivially destructible types may live here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace torchport::syntax {

class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&&) noexcept = default;
  Arena& operator=(Arena&&) noexcept = default;

  /// Raw storage of `size` bytes aligned to `align` (a power of two, at most alignof(max_align_t)).
  void* allocate(std::size_t size, std::size_t align) {
    std::uintptr_t p = (reinterpret_cast<std::uintptr_t>(cur_) + (align - 1)) & ~(align - 1);
    if (cur_ == nullptr || p + size > reinterpret_cast<std::uintptr_t>(end_)) {
      grow(size + align);
      p = (reinterpret_cast<std::uintptr_t>(cur_) + (align - 1)) & ~(align - 1);
    }
    cur_ = reinterpret_cast<std::byte*>(p + size);
    used_ += size;
    return reinterpret_cast<void*>(p);
  }

  /// A new T built in the arena. T must be trivially destructible (nothing is ever destroyed).
  template <class T, class... Args>
  T* make(Args&&... args) {
    static_assert(std::is_trivially_destructible_v<T>);
    return new (allocate(sizeof(T), alignof(T))) T(std::forward<Args>(args)...);
  }

  /// An uninitialised array of `n` trivially destructible T.
  template <class T>
  T* array(std::size_t n) {
    static_assert(std::is_trivially_destructible_v<T>);
    if (n == 0) return nullptr;
    return static_cast<T*>(allocate(sizeof(T) * n, alignof(T)));
  }

  /// Bytes handed out so far (for memory statistics).
  std::size_t bytes_used() const { return used_; }

 private:
  // Out of line: allocate() is inlined into the parser's make(), which runs for every node,
  // and a new block is needed once in thousands of calls.
  [[gnu::noinline]] void grow(std::size_t at_least) {
    std::size_t size = next_block_ < at_least ? at_least : next_block_;
    blocks_.push_back(std::unique_ptr<std::byte[]>(new std::byte[size]));  // not zeroed
    cur_ = blocks_.back().get();
    end_ = cur_ + size;
    if (next_block_ < (std::size_t{1} << 24)) next_block_ *= 2;
  }

  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::byte* cur_ = nullptr;
  std::byte* end_ = nullptr;
  std::size_t next_block_ = 16 * 1024;
  std::size_t used_ = 0;
};

}  // namespace torchport::syntax
