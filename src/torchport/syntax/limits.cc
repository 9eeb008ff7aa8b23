#include <pthread.h>
#include <signal.h>
#include <torchport/syntax/limits.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace torchport::syntax {

struct WalkThread::State {
  std::function<void()> fn;
  std::exception_ptr error;
  pthread_t thread{};
  bool joined = false;
};

namespace {

void* trampoline(void* arg) {
  auto* s = static_cast<WalkThread::State*>(arg);
  // A stack for signal handlers (unless the sanitizers set one up already), so that a fatal-signal
  // handler still runs when this thread's own stack is what overflowed.
  std::vector<char> alt;
  stack_t current{};
  const bool own_alt = ::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE);
  if (own_alt) {
    alt.resize(std::size_t{64} << 10);
    stack_t ss{};
    ss.ss_sp = alt.data();
    ss.ss_size = alt.size();
    ::sigaltstack(&ss, nullptr);
  }
  try {
    s->fn();
  } catch (...) {
    s->error = std::current_exception();
  }
  if (own_alt) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
  }
  return nullptr;
}

}  // namespace

WalkThread::WalkThread(std::function<void()> fn) : state_(new State{std::move(fn), {}, {}, false}) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kWalkStackBytes);
  int rc = pthread_create(&state_->thread, &attr, trampoline, state_);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    delete state_;
    state_ = nullptr;
    throw std::runtime_error(std::string("cannot start a worker thread with a ") +
                             std::to_string(kWalkStackBytes >> 20) +
                             " MiB stack: " + std::strerror(rc));
  }
}

WalkThread::WalkThread(WalkThread&& other) noexcept
    : state_(std::exchange(other.state_, nullptr)) {}

void WalkThread::join() {
  if (state_ == nullptr || state_->joined) return;
  pthread_join(state_->thread, nullptr);
  state_->joined = true;
  if (state_->error) std::rethrow_exception(std::exchange(state_->error, nullptr));
}

WalkThread::~WalkThread() {
  if (state_ == nullptr) return;
  if (!state_->joined) pthread_join(state_->thread, nullptr);
  delete state_;
}

void run_on_walk_stack(std::function<void()> fn) {
  WalkThread t(std::move(fn));
  t.join();
}

}  // namespace torchport::syntax
