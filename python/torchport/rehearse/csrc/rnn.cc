// The fused RNN cell kernels. ATen's LSTM and GRU (aten/src/ATen/native/RNN.cpp) compute a cell
// with one fused operator on CUDA, XPU and PrivateUse1 devices (input.is_privateuseone()):
// _thnn_fused_lstm_cell and _thnn_fused_gru_cell, whose backward operators autograd calls as
// _thnn_fused_lstm_cell_backward_impl (through the composite _thnn_fused_lstm_cell_backward) and
// _thnn_fused_gru_cell_backward. Torch has CUDA kernels for them and no CPU kernel, so the boxed
// fallback cannot run them; the vendors ship their own. These are the rehearsal device's, with the
// semantics of torch's CUDA kernels (aten/src/ATen/native/cuda/RNN.cu), computed with CPU ATen ops
// on CPU views of the device tensors.
//
// Arguments (B: batch, H: hidden size; tensors of any strides):
//   LSTM: input_gates, hidden_gates [B, 4H] in the gate order i, f, g, o; cx [B, H]; optional
//         input_bias, hidden_bias [4H]. Returns hy, cy [B, H] and the workspace [B, 4H]: the
//         activated gates sigmoid(i), sigmoid(f), tanh(g), sigmoid(o), in that order.
//   GRU:  input_gates, hidden_gates [B, 3H] in the gate order r, z, n; hx [B, H]; optional biases
//         [3H]. n = tanh(in + b_in + r * (hn + b_hn)), hy = n + z * (hx - n). Returns hy and the
//         workspace [B, 5H]: r, z, n, hx, hn + b_hn.
// The backward kernels read only the workspace (and cx, cy for the LSTM). Half and bfloat16 (e.g.
// under autocast, whose lists hold both cells) compute in float32 and store in their own dtype,
// as CUDA's accumulate type does.
#include <torch/library.h>

#include "rehearse.h"

namespace torchport::rehearse {
namespace {

c10::OperatorHandle handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

bool defined(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// The CPU view of a device tensor in the dtype the cell computes in.
at::Tensor acc(const at::Tensor& t) {
  at::Tensor c = as_cpu(t);
  const c10::ScalarType st = c.scalar_type();
  return st == at::kHalf || st == at::kBFloat16 ? c.to(at::kFloat) : c;
}

at::Tensor stored(const at::Tensor& t, c10::ScalarType st) {
  return t.scalar_type() == st ? t : t.to(st);
}

// checkSizes of RNN.cu: gates [B, factor*H] of equal size, biases [factor*H], hidden [B, H].
void check_cell(const char* op, const at::Tensor& ig, const at::Tensor& hg,
                const std::optional<at::Tensor>& b1, const std::optional<at::Tensor>& b2,
                int64_t factor, const at::Tensor& hidden) {
  TORCH_CHECK(ig.dim() == 2, op, ": expected input_gates to be 2-D, got ", ig.dim(), "-D");
  TORCH_CHECK(ig.sizes() == hg.sizes(), op, ": input_gates ", ig.sizes(), " and hidden_gates ",
              hg.sizes(), " differ in size");
  const int64_t gates = ig.size(1);
  TORCH_CHECK(defined(b1) == defined(b2), op, ": input_bias and hidden_bias must both be given");
  if (defined(b1)) {
    TORCH_CHECK(b1->dim() == 1 && b1->numel() == gates, op, ": expected input_bias of ", gates,
                " elements, got ", b1->sizes());
    TORCH_CHECK(b1->sizes() == b2->sizes(), op, ": input_bias ", b1->sizes(), " and hidden_bias ",
                b2->sizes(), " differ in size");
  }
  TORCH_CHECK(gates % factor == 0 && hidden.dim() == 2 && hidden.size(0) == ig.size(0) &&
                  hidden.size(1) == gates / factor,
              op, ": expected the hidden state of size [", ig.size(0), ", ", gates / factor,
              "], got ", hidden.sizes());
  for (const at::Tensor& t : {ig, hg, hidden}) {
    TORCH_CHECK(t.scalar_type() == ig.scalar_type(), op,
                ": expected all tensors of one dtype, got ", ig.scalar_type(), " and ",
                t.scalar_type());
  }
}

// The gates' pre-activations: input_gates + hidden_gates + input_bias + hidden_bias, in that order.
at::Tensor preact(const at::Tensor& ig, const at::Tensor& hg, const std::optional<at::Tensor>& b1,
                  const std::optional<at::Tensor>& b2) {
  at::Tensor g = at::add(acc(ig), acc(hg));
  if (defined(b1)) g.add_(acc(*b1)).add_(acc(*b2));
  return g;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell(const at::Tensor& input_gates,
                                                         const at::Tensor& hidden_gates,
                                                         const at::Tensor& cx,
                                                         const std::optional<at::Tensor>& b1,
                                                         const std::optional<at::Tensor>& b2) {
  const c10::ScalarType st = input_gates.scalar_type();
  std::vector<at::Tensor> g = preact(input_gates, hidden_gates, b1, b2).chunk(4, 1);
  at::Tensor i = g[0].sigmoid();
  at::Tensor f = g[1].sigmoid();
  at::Tensor c = g[2].tanh();
  at::Tensor o = g[3].sigmoid();
  at::Tensor cy = at::mul(f, acc(cx)).add_(at::mul(i, c));
  at::Tensor hy = at::mul(o, cy.tanh());
  at::Tensor workspace = stored(at::cat({i, f, c, o}, 1), st);
  return {stored(hy, st), stored(cy, st), workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx_, const at::Tensor& cy_, const at::Tensor& workspace, bool has_bias) {
  const c10::ScalarType st = workspace.scalar_type();
  at::Tensor cx = acc(cx_);
  std::vector<at::Tensor> w = acc(workspace).chunk(4, 1);
  const at::Tensor &i = w[0], &f = w[1], &c = w[2], &o = w[3];
  at::Tensor gh = defined(grad_hy) ? acc(*grad_hy) : at::zeros_like(cx);
  at::Tensor gc = defined(grad_cy) ? acc(*grad_cy) : at::zeros_like(cx);
  at::Tensor tcy = acc(cy_).tanh();
  // d loss / d cy: through hy = o * tanh(cy), and from grad_cy
  at::Tensor gcy = gh * o * (1 - tcy * tcy) + gc;
  at::Tensor gi = gcy * c * (1 - i) * i;
  at::Tensor gf = gcy * cx * (1 - f) * f;
  at::Tensor gg = gcy * i * (1 - c * c);
  at::Tensor go = gh * tcy * (1 - o) * o;
  at::Tensor grad_gates = stored(at::cat({gi, gf, gg, go}, 1), st);
  at::Tensor grad_cx = stored(gcy * f, st);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> gru_cell(const at::Tensor& input_gates,
                                            const at::Tensor& hidden_gates, const at::Tensor& hx,
                                            const std::optional<at::Tensor>& b1,
                                            const std::optional<at::Tensor>& b2) {
  const c10::ScalarType st = input_gates.scalar_type();
  std::vector<at::Tensor> gi = acc(input_gates).chunk(3, 1);
  std::vector<at::Tensor> gh = acc(hidden_gates).chunk(3, 1);
  std::vector<at::Tensor> bi, bh;
  if (defined(b1)) {
    bi = acc(*b1).chunk(3, 0);
    bh = acc(*b2).chunk(3, 0);
  }
  auto plus_bias = [&](at::Tensor t, const std::vector<at::Tensor>& b, int k) {
    return b.empty() ? t : t.add_(b[static_cast<size_t>(k)]);
  };
  at::Tensor r = plus_bias(plus_bias(gi[0] + gh[0], bi, 0), bh, 0).sigmoid();
  at::Tensor z = plus_bias(plus_bias(gi[1] + gh[1], bi, 1), bh, 1).sigmoid();
  at::Tensor hn = plus_bias(gh[2].clone(), bh, 2);  // the hidden-side n gate, its bias added
  at::Tensor n = plus_bias(gi[2].clone(), bi, 2).add_(r * hn).tanh();
  at::Tensor h = acc(hx);
  at::Tensor hy = n + z * (h - n);
  at::Tensor workspace = stored(at::cat({r, z, n, h, hn}, 1), st);
  return {stored(hy, st), workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  const c10::ScalarType st = workspace.scalar_type();
  std::vector<at::Tensor> w = acc(workspace).chunk(5, 1);
  const at::Tensor &r = w[0], &z = w[1], &n = w[2], &hx = w[3], &hn = w[4];
  at::Tensor g = acc(grad_hy);
  at::Tensor gz = g * (hx - n) * (1 - z) * z;
  at::Tensor ghx = g * z;
  at::Tensor gn = g * (1 - z) * (1 - n * n);  // the input-side n gate
  at::Tensor ghn = gn * r;                    // the hidden-side n gate
  at::Tensor gr = gn * hn * (1 - r) * r;
  at::Tensor grad_input = stored(at::cat({gr, gz, gn}, 1), st);
  at::Tensor grad_hidden = stored(at::cat({gr, gz, ghn}, 1), st);
  at::Tensor grad_input_bias = has_bias ? grad_input.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden.sum(0) : at::Tensor();
  return {grad_input, grad_hidden, stored(ghx, st), grad_input_bias, grad_hidden_bias};
}

template <class... T>
std::tuple<T...> to_device(const std::tuple<T...>& r, c10::DeviceIndex dev) {
  return std::apply([dev](const auto&... t) { return std::tuple<T...>(as_device(t, dev)...); }, r);
}

// ---- the device kernels: judged, counted and timed as the target's lists say ----

std::tuple<at::Tensor, at::Tensor, at::Tensor> rh_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  static const c10::OperatorHandle op = handle("aten::_thnn_fused_lstm_cell");
  OpEntry& e = op_entry(op);
  check_cell("_thnn_fused_lstm_cell", input_gates, hidden_gates, input_bias, hidden_bias, 4, cx);
  const c10::DeviceIndex dev = input_gates.device().index();
  return to_device(
      run_own_kernel(
          e, refused_dtype({input_gates, hidden_gates, cx}), dev,
          [&] { return lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias); }),
      dev);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> rh_lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  static const c10::OperatorHandle op = handle("aten::_thnn_fused_lstm_cell_backward_impl");
  OpEntry& e = op_entry(op);
  if (!defined(grad_hy) && !defined(grad_cy)) return {};  // as CUDA's: nothing flows back
  TORCH_CHECK(workspace.dim() == 2 && cx.dim() == 2 && cx.sizes() == cy.sizes() &&
                  workspace.size(0) == cx.size(0) && workspace.size(1) == 4 * cx.size(1) &&
                  (!defined(grad_hy) || grad_hy->sizes() == cx.sizes()) &&
                  (!defined(grad_cy) || grad_cy->sizes() == cx.sizes()),
              "_thnn_fused_lstm_cell_backward_impl: expected grad_hy, grad_cy, cx, cy [B, H] and a "
              "workspace [B, 4H], got cx ",
              cx.sizes(), ", cy ", cy.sizes(), ", workspace ", workspace.sizes());
  const c10::DeviceIndex dev = workspace.device().index();
  return to_device(
      run_own_kernel(
          e, refused_dtype({workspace, cx, cy}), dev,
          [&] { return lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias); }),
      dev);
}

std::tuple<at::Tensor, at::Tensor> rh_gru_cell(const at::Tensor& input_gates,
                                               const at::Tensor& hidden_gates, const at::Tensor& hx,
                                               const std::optional<at::Tensor>& input_bias,
                                               const std::optional<at::Tensor>& hidden_bias) {
  static const c10::OperatorHandle op = handle("aten::_thnn_fused_gru_cell");
  OpEntry& e = op_entry(op);
  check_cell("_thnn_fused_gru_cell", input_gates, hidden_gates, input_bias, hidden_bias, 3, hx);
  const c10::DeviceIndex dev = input_gates.device().index();
  return to_device(
      run_own_kernel(
          e, refused_dtype({input_gates, hidden_gates, hx}), dev,
          [&] { return gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias); }),
      dev);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> rh_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  static const c10::OperatorHandle op = handle("aten::_thnn_fused_gru_cell_backward");
  OpEntry& e = op_entry(op);
  TORCH_CHECK(
      workspace.dim() == 2 && grad_hy.dim() == 2 && workspace.size(0) == grad_hy.size(0) &&
          workspace.size(1) == 5 * grad_hy.size(1),
      "_thnn_fused_gru_cell_backward: expected grad_hy [B, H] and a workspace [B, 5H], got ",
      grad_hy.sizes(), ", ", workspace.sizes());
  const c10::DeviceIndex dev = workspace.device().index();
  return to_device(run_own_kernel(e, refused_dtype({grad_hy, workspace}), dev,
                                  [&] { return gru_cell_backward(grad_hy, workspace, has_bias); }),
                   dev);
}

}  // namespace
}  // namespace torchport::rehearse

namespace {
namespace rh = torchport::rehearse;

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(rh::rh_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(rh::rh_lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(rh::rh_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(rh::rh_gru_cell_backward));
}
}  // namespace
