// How deep a syntax tree may be, and the stack every walk over such a tree is given.
//
// The bound lives in one place: the parser refuses a file whose tree would be more than
// kMaxNesting nodes deep ("too deeply nested", a syntax error at the node that crossed it), so
// every recursive walk over a tree the parser returns -- printer, semantic model, rules, fixes,
// self-check, reports -- recurses at most kMaxNesting times. Each such walk runs on a thread
// made by run_on_walk_stack()/WalkThread, whose stack (kWalkStackBytes) holds that depth with
// room to spare in every build, the sanitizer build included (tests: depth_test.cc,
// project/deep_files_test.cc).
//
// CPython compiles a module about 3,000 levels deep (RecursionError beyond: a 2,991-term sum,
// 1,496 chained `.f()` calls, 2,992 unary minus) and its tokenizer stops at 200 nested brackets;
// the limit here is above that, so any file CPython accepts is accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>

namespace torchport::syntax {

/// The deepest tree the parser builds, in nodes from the Module down to a leaf.
inline constexpr std::uint32_t kMaxNesting = 4000;
/// The syntax error for a file that nests deeper.
inline constexpr const char* kTooDeep = "too deeply nested";
/// The stack of every thread that parses or walks trees (virtual memory: pages are only
/// committed as they are touched, so a shallow file costs what it costs on any stack).
/// Measured on files at the limit (deep_files_test.cc, every walk of migrate): the sanitizer
/// build, whose frames are the largest, overflows 2 MiB and passes with 8 MiB; 64 MiB is eight
/// times that.
inline constexpr std::size_t kWalkStackBytes = std::size_t{64} << 20;

/// A thread with kWalkStackBytes of stack. An exception thrown by `fn` is rethrown by join().
class WalkThread {
 public:
  explicit WalkThread(std::function<void()> fn);
  WalkThread(const WalkThread&) = delete;
  WalkThread& operator=(const WalkThread&) = delete;
  WalkThread(WalkThread&& other) noexcept;
  WalkThread& operator=(WalkThread&&) = delete;
  ~WalkThread();  ///< joins if join() was not called (never rethrows)
  void join();

  struct State;  ///< the thread's function, its exception and its handle (limits.cc)

 private:
  State* state_;
};

/// Runs `fn` on a WalkThread and waits for it; its exception, if any, is rethrown here.
void run_on_walk_stack(std::function<void()> fn);

}  // namespace torchport::syntax
