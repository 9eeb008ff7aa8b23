// The per-file phases of the driver for a Jupyter notebook (.ipynb): the notebook is read
// (notebook/notebook.h) into one virtual module of its code cells, which goes through the same
// phases as a Python file (parse, model, rules, fixes, output pass); then the edits are mapped
// back into the cells' JSON strings, and the self-check reads the new notebook again: its module
// must be the edited module, and it must parse. Rows are located in cells (report::Row::cell).
// A notebook whose JSON is broken, or whose cell does not parse, is a Failure whose reason says
// where (`nb.ipynb:12:5: ...` in the file, `nb.ipynb:cell3:2:5: ...` in a cell), copied as it is.
#pragma once

#include <torchport/project/run_rules.h>

#include <string>

namespace torchport::project {

/// Input: the notebook's bytes. Output, in the returned work: rows, the new bytes and the diff
/// (one hunk set per changed cell, as Python), or the Failure that keeps the original.
FileWork process_notebook(const ProjectFile& f, FileWork w, std::string bytes,
                          const FileContext& ctx);

}  // namespace torchport::project
