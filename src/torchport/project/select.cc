#include <torchport/project/select.h>
#include <torchport/rules/engine.h>

#include <cstring>

namespace torchport::project {

namespace fs = std::filesystem;
using report::Outcome;

Selected select_files(const Plan& plan, const Options& opts) {
  Selected out;
  out.files = discover(plan.input, plan.exclude, opts.default_excludes, &out.excluded);
  // Requirements follow the output: which Python files import the target's vendor package is
  // only asked when the project has requirements that could name it.
  for (const ProjectFile& f : out.files) {
    const std::string base = fs::path(f.rel).filename().string();
    if (f.kind == FileKind::Scanned &&
        (base == "pyproject.toml" || (base.starts_with("requirements") && base.ends_with(".txt"))))
      out.package = plan.target().package;
  }
  return out;
}

namespace {

/// A symbolic link is recreated, never followed; one to a project file outside the input is
/// reported as not migrated.
void admit_link(const ProjectFile& f, const Options& opts, FileWork& w) {
  w.entry.outcome = Outcome::Skip;
  w.entry.reason = "symbolic link: not followed";
  std::error_code ec;
  fs::path target = fs::weakly_canonical(f.path, ec);
  if (ec || fs::is_symlink(fs::symlink_status(target, ec))) {
    w.entry.reason = "symbolic link that does not resolve (a loop?): recreated as a link";
  } else if (classify(target.native()) != FileKind::Other && fs::is_regular_file(target, ec) &&
             !is_within(target, opts.input)) {
    // Its target is not part of the project, so nothing migrates it: the user must know.
    w.entry.python = classify(target.native()) == FileKind::Python ||
                     classify(target.native()) == FileKind::Notebook;
    w.entry.not_migrated = true;
    w.entry.reason = f.rel + ": symbolic link to " + target.string() +
                     ", outside the input: recreated as a link, its target not migrated";
  }
}

}  // namespace

Admitted admit_file(const ProjectFile& f, const Options& opts, const text::OpenDirectory* root) {
  Admitted a;
  FileWork& w = a.work;
  w.entry.file = f.rel;
  w.entry.python = f.kind == FileKind::Python || f.kind == FileKind::Notebook;
  for (const CrashedFile& c : opts.crashed)
    if (c.rel == f.rel) {
      fail(w, f.rel + ": torchport crashed (" + c.signal +
                  ") on this file and ran again without it: copied unchanged (a bug in "
                  "torchport: please report it)");
      return a;
    }
  if (std::string pattern = opts.selection.excluded_by(f.rel); !pattern.empty()) {
    w.entry.outcome = Outcome::Skip;
    w.entry.reason = "excluded by '" + pattern + "': copied unchanged";
    return a;
  }
  if (f.kind == FileKind::Symlink) {
    admit_link(f, opts, w);
    return a;
  }
  if (f.kind == FileKind::Unlisted) {
    fail(w, f.rel + ": cannot list the directory: " + std::strerror(f.read_error) +
                ": nothing in it is migrated or copied");
    return a;
  }
  if (f.kind == FileKind::Other) {
    w.entry.outcome = Outcome::Skip;
    w.entry.reason = "not Python: copied unchanged";
    return a;
  }
  std::uintmax_t size = f.size;
  if (opts.max_bytes && !f.size_known) {
    std::error_code ec;
    size = fs::file_size(f.path, ec);
    if (ec) size = 0;
  }
  if (opts.max_bytes && size > opts.max_bytes) {
    w.entry.outcome = Outcome::Skip;
    w.entry.not_migrated = true;
    w.entry.reason = f.rel + ": " + std::to_string(size) + " bytes, larger than --max-file-size (" +
                     std::to_string(opts.max_bytes) + " bytes): copied unchanged";
    return a;
  }
  if (f.kind == FileKind::Scanned && !rules::other_file_read(f.rel)) {
    // No rule reads it (a C/C++ header): scanned, with nothing to find. Whether it could be
    // read was still asked (by discover), as reading it would have.
    if (f.read_error != 0) {
      fail(w, f.rel + ": cannot read: " + std::strerror(f.read_error));
      return a;
    }
    w.entry.outcome = Outcome::Success;
    return a;
  }
  std::string bytes, error;
  // discover measured a regular file's size: it is not asked again
  const std::size_t measured = f.size_known ? static_cast<std::size_t>(f.size) : 0;
  if (!(root ? root->read(f.rel, bytes, error, measured) : read_file(f.path, bytes, error))) {
    fail(w, f.rel + ": cannot read: " + error);
    return a;
  }
  a.bytes = std::move(bytes);
  return a;
}

}  // namespace torchport::project
