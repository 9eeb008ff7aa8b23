#include <torchport/cli/cli.h>
#include <torchport/syntax/limits.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Each file's tokens, tree arena and model are freed before the next file is read. glibc would
  // hand blocks over 128 KiB back to the kernel (mmap/munmap) and trim the heap each time, so
  // every file paid page faults and page zeroing again; keeping them in the heap makes migrate of
  // the 2,285-file torch tree ~4% faster at --jobs 2 with the same peak memory on a 10 MB file
  // (docs/benchmarks.md). The allocator still returns memory when the process exits.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
  // The command runs on a thread whose stack holds the deepest tree the parser accepts in every
  // recursive walk (syntax/limits.h); the default 8 MiB main stack is not enough for that under
  // the sanitizers.
  int rc = 4;
  torchport::syntax::run_on_walk_stack([&] { rc = torchport::cli::run(argc, argv); });
  return rc;
}
