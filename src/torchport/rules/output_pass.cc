// The output pass: the families that read the Python text check()'s fixes produced
// (Input::PythonOutput), so that they see the other rules' rewrites. TP310 (idiom.cc) is one.
#include <torchport/rules/context.h>
#include <torchport/rules/project_rules.h>

namespace torchport::rules {

void run_idiom(Context& ctx) {
  for (Finding& f : port_device_idiom(ctx.tree, ctx.m, ctx.cat, ctx.opts))
    ctx.result.findings.push_back(std::move(f));
}

bool output_pass_needed(const syntax::Tree& original, const Options& opts) {
  return opts.port_idiom && defines_cuda_flag(original);
}

FileResult check_output(const syntax::Tree& tree, const semantic::Model& model,
                        const catalogue::Catalogue& cat, const Options& opts) {
  catalogue::Target fallback;
  Context ctx(tree, model, cat, target_or_fallback(cat, opts.target, fallback), opts);
  for (const FamilyInfo* f : families())
    if (f->input == Input::PythonOutput && f->run) f->run(ctx);
  return std::move(ctx.result);
}

}  // namespace torchport::rules
