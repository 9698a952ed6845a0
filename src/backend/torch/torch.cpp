/* libtorch behind a C interface (torch-api.h): the one C++ file of ntprof.
 *
 * Each layer runs the ATen operators PyTorch's own modules call (Conv2d's
 * forward is at::conv2d, Linear's at::linear, BatchNorm2d's in eval mode
 * at::batch_norm, LSTM's at::lstm, ...), in eager mode, as a PyTorch
 * program runs them. Weights are wrapped with at::from_blob (no copy),
 * except the recurrent layers', which PyTorch wants in another gate order.
 * Outputs that another layer of this backend reads stay here as at::Tensor
 * (the handle the consumer is given), as they do between the modules of a
 * PyTorch program; outputs read elsewhere are written to the engine's
 * buffer, directly where ATen has an out= variant.
 *
 * The whole-graph mode compiles TorchScript source (written by the C side)
 * into a torch::jit::Module, freezes it and optimises it for inference,
 * as a PyTorch deployment does with torch.jit.freeze and
 * torch.jit.optimize_for_inference.
 *
 * Errors never cross the C interface as exceptions: every entry point
 * catches and writes one line. */
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/freeze_module.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <string>
#include <vector>

extern "C" {
#include "torch-api.h"
}

namespace {

struct Handle {
    at::Tensor t;
};

struct State {
    int threads = 1;
    bool channels_last = false;
};

struct Node {
    ntp_torch_layer l{};
    std::vector<at::Tensor> w;      /* weights, wrapping the engine's buffers */
    std::vector<at::Tensor> params; /* recurrent layers: PyTorch's flat weights */
    Handle out[NTP_TORCH_MAX_IO];
};

void fail(char *err, size_t len, const std::string &what)
{
    if (!err || !len)
        return;
    /* One line: ATen's and TorchScript's messages span several (the
     * source line in error, a C++ backtrace); keep the lines before the
     * backtrace, joined. */
    std::string s;
    size_t at = 0;
    while (at < what.size()) {
        size_t nl = what.find('\n', at);
        std::string line = what.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
        at = nl == std::string::npos ? what.size() : nl + 1;
        if (line.rfind("Exception raised from", 0) == 0)
            break;
        size_t b = line.find_first_not_of(" \t~^");
        if (b == std::string::npos)
            continue;
        if (!s.empty())
            s += " | ";
        s += line.substr(b);
    }
    std::snprintf(err, len, "%s", s.c_str());
}

std::vector<int64_t> dims(const ntp_torch_tensor &t)
{
    return std::vector<int64_t>(t.dim, t.dim + t.ndim);
}

at::Tensor wrap(const ntp_torch_tensor &t, float *data)
{
    return at::from_blob(data, dims(t),
                         at::TensorOptions().dtype(t.int64   ? at::kLong
                                                   : t.int32 ? at::kInt
                                                             : at::kFloat));
}

at::MemoryFormat format_for(const State *s, int64_t ndim)
{
    if (!s->channels_last)
        return at::MemoryFormat::Contiguous;
    if (ndim == 4)
        return at::MemoryFormat::ChannelsLast;
    if (ndim == 5)
        return at::MemoryFormat::ChannelsLast3d;
    return at::MemoryFormat::Contiguous;
}

std::vector<int64_t> first(const int64_t *v, int n)
{
    return std::vector<int64_t>(v, v + n);
}

/* PyTorch's gate order from ONNX's: LSTM i o f c -> i f g o, GRU z r h ->
 * r z n; one gate for a vanilla RNN. src_block[j] is the ONNX block of
 * PyTorch's block j. */
void reorder_gates(const at::Tensor &src, at::Tensor &dst, int64_t H, const int *src_block, int G)
{
    for (int j = 0; j < G; j++)
        dst.narrow(0, j * H, H).copy_(src.narrow(0, src_block[j] * H, H));
}

void prepare_rnn(Node *nd)
{
    const ntp_torch_layer &l = nd->l;
    static const int lstm_map[4] = {0, 2, 3, 1};
    static const int gru_map[3] = {1, 0, 2};
    static const int rnn_map[1] = {0};
    const int *map = l.op == NTP_TORCH_LSTM ? lstm_map : l.op == NTP_TORCH_GRU ? gru_map : rnn_map;
    int G = l.op == NTP_TORCH_LSTM ? 4 : l.op == NTP_TORCH_GRU ? 3 : 1;
    int64_t H = l.hidden;
    int dirs = l.bidirectional ? 2 : 1;
    const at::Tensor &W = nd->w[0], &R = nd->w[1];
    for (int d = 0; d < dirs; d++) {
        at::Tensor wi = at::empty({G * H, W.size(2)}, W.options());
        at::Tensor wh = at::empty({G * H, R.size(2)}, R.options());
        reorder_gates(W[d], wi, H, map, G);
        reorder_gates(R[d], wh, H, map, G);
        nd->params.push_back(wi);
        nd->params.push_back(wh);
        if (l.bias) {
            const at::Tensor &B = nd->w[2];
            at::Tensor bi = at::empty({G * H}, B.options()), bh = at::empty({G * H}, B.options());
            reorder_gates(B[d].narrow(0, 0, G * H), bi, H, map, G);
            reorder_gates(B[d].narrow(0, G * H, G * H), bh, H, map, G);
            nd->params.push_back(bi);
            nd->params.push_back(bh);
        }
    }
}

at::Tensor unary(const ntp_torch_layer &l, const at::Tensor &x)
{
    switch (l.fn) {
    case NTP_TORCH_FN_RELU: return at::relu(x);
    case NTP_TORCH_FN_LEAKY_RELU: return at::leaky_relu(x, l.alpha);
    case NTP_TORCH_FN_SIGMOID: return at::sigmoid(x);
    case NTP_TORCH_FN_TANH: return at::tanh(x);
    case NTP_TORCH_FN_GELU: return at::gelu(x);
    case NTP_TORCH_FN_SILU: return at::silu(x);
    case NTP_TORCH_FN_HARDSWISH: return at::hardswish(x);
    case NTP_TORCH_FN_CLAMP:
        if (std::isinf(l.min) && std::isinf(l.max)) /* clip without bounds: at::clamp refuses */
            return x.clone();
        return at::clamp(x, std::isinf(l.min) ? c10::optional<at::Scalar>() : at::Scalar(l.min),
                         std::isinf(l.max) ? c10::optional<at::Scalar>() : at::Scalar(l.max));
    case NTP_TORCH_FN_ABS: return at::abs(x);
    case NTP_TORCH_FN_NEG: return at::neg(x);
    case NTP_TORCH_FN_EXP: return at::exp(x);
    case NTP_TORCH_FN_LOG: return at::log(x);
    case NTP_TORCH_FN_SQRT: return at::sqrt(x);
    case NTP_TORCH_FN_RECIPROCAL: return at::reciprocal(x);
    case NTP_TORCH_FN_ERF: return at::erf(x);
    case NTP_TORCH_FN_FLOOR: return at::floor(x);
    case NTP_TORCH_FN_CEIL: return at::ceil(x);
    case NTP_TORCH_FN_ROUND: return at::round(x);
    case NTP_TORCH_FN_SIGN: return at::sign(x);
    case NTP_TORCH_FN_SIN: return at::sin(x);
    case NTP_TORCH_FN_COS: return at::cos(x);
    case NTP_TORCH_FN_TAN: return at::tan(x);
    case NTP_TORCH_FN_ASIN: return at::asin(x);
    case NTP_TORCH_FN_ACOS: return at::acos(x);
    case NTP_TORCH_FN_ATAN: return at::atan(x);
    case NTP_TORCH_FN_SINH: return at::sinh(x);
    case NTP_TORCH_FN_COSH: return at::cosh(x);
    case NTP_TORCH_FN_ASINH: return at::asinh(x);
    case NTP_TORCH_FN_ACOSH: return at::acosh(x);
    case NTP_TORCH_FN_ATANH: return at::atanh(x);
    case NTP_TORCH_FN_SOFTPLUS: return at::softplus(x);
    case NTP_TORCH_FN_ELU: return at::elu(x, l.alpha);
    case NTP_TORCH_FN_CELU: return at::celu(x, l.alpha);
    case NTP_TORCH_FN_MISH: return at::mish(x);
    case NTP_TORCH_FN_LOG_SIGMOID: return at::log_sigmoid(x);
    }
    throw std::runtime_error("unknown element-wise function");
}

at::Tensor conv(const ntp_torch_layer &l, const std::vector<at::Tensor> &w, at::Tensor x)
{
    if (l.pre_pad) {
        /* F.pad's order: last dim first, begin then end. */
        std::vector<int64_t> p;
        for (int d = l.nk - 1; d >= 0; d--) {
            p.push_back(l.pads[d]);
            p.push_back(l.pads[l.nk + d]);
        }
        x = at::constant_pad_nd(x, p, 0.0);
    }
    at::Tensor b = l.bias ? w[1] : at::Tensor();
    auto st = first(l.stride, l.nk), pd = first(l.pad, l.nk), dl = first(l.dilation, l.nk);
    if (l.op == NTP_TORCH_DECONV) {
        auto op = first(l.output_padding, l.nk);
        switch (l.nk) {
        case 1: return at::conv_transpose1d(x, w[0], b, st, pd, op, l.groups, dl);
        case 2: return at::conv_transpose2d(x, w[0], b, st, pd, op, l.groups, dl);
        default: return at::conv_transpose3d(x, w[0], b, st, pd, op, l.groups, dl);
        }
    }
    switch (l.nk) {
    case 1: return at::conv1d(x, w[0], b, st, pd, dl, l.groups);
    case 2: return at::conv2d(x, w[0], b, st, pd, dl, l.groups);
    default: return at::conv3d(x, w[0], b, st, pd, dl, l.groups);
    }
}

at::Tensor pool(const ntp_torch_layer &l, const at::Tensor &x)
{
    auto k = first(l.kernel, l.nk), st = first(l.stride, l.nk), pd = first(l.pad, l.nk),
         dl = first(l.dilation, l.nk);
    if (l.op == NTP_TORCH_MAXPOOL) {
        switch (l.nk) {
        case 1: return at::max_pool1d(x, k, st, pd, dl, l.ceil_mode);
        case 2: return at::max_pool2d(x, k, st, pd, dl, l.ceil_mode);
        default: return at::max_pool3d(x, k, st, pd, dl, l.ceil_mode);
        }
    }
    switch (l.nk) {
    case 1: return at::avg_pool1d(x, k, st, pd, l.ceil_mode, l.count_include_pad);
    case 2: return at::avg_pool2d(x, k, st, pd, l.ceil_mode, l.count_include_pad);
    default: return at::avg_pool3d(x, k, st, pd, l.ceil_mode, l.count_include_pad);
    }
}

at::Tensor global_pool(const ntp_torch_layer &l, const at::Tensor &x)
{
    if (x.dim() == 4)
        return l.op == NTP_TORCH_GLOBAL_AVGPOOL ? at::adaptive_avg_pool2d(x, {1, 1})
                                                : std::get<0>(at::adaptive_max_pool2d(x, {1, 1}));
    std::vector<int64_t> sp;
    for (int64_t d = 2; d < x.dim(); d++)
        sp.push_back(d);
    return l.op == NTP_TORCH_GLOBAL_AVGPOOL ? at::mean(x, sp, true) : at::amax(x, sp, true);
}

at::Tensor rnn(const Node *nd, at::Tensor x)
{
    const ntp_torch_layer &l = nd->l;
    if (l.reverse)
        x = x.flip(0);
    int dirs = l.bidirectional ? 2 : 1;
    at::Tensor h0 = at::zeros({dirs, x.size(1), l.hidden}, x.options());
    at::Tensor y, hn;
    if (l.op == NTP_TORCH_LSTM) {
        at::Tensor c0 = at::zeros_like(h0);
        auto r = at::lstm(x, {h0, c0}, nd->params, l.bias, 1, 0.0, false, l.bidirectional, false);
        y = std::get<0>(r);
        hn = std::get<1>(r);
    } else {
        std::tuple<at::Tensor, at::Tensor> r =
            l.op == NTP_TORCH_GRU
                ? at::gru(x, h0, nd->params, l.bias, 1, 0.0, false, l.bidirectional, false)
            : l.op == NTP_TORCH_RNN_TANH
                ? at::rnn_tanh(x, h0, nd->params, l.bias, 1, 0.0, false, l.bidirectional, false)
                : at::rnn_relu(x, h0, nd->params, l.bias, 1, 0.0, false, l.bidirectional, false);
        y = std::get<0>(r);
        hn = std::get<1>(r);
    }
    if (l.last_step) {
        /* Each direction's final state: [dirs, N, H]. */
        if (dirs == 1)
            return hn[0];
        return l.merge_sum ? hn[0] + hn[1] : at::cat({hn[0], hn[1]}, 1);
    }
    if (dirs == 2 && l.merge_sum)
        return y.narrow(2, 0, l.hidden) + y.narrow(2, l.hidden, l.hidden);
    return l.reverse ? y.flip(0) : y;
}

/* torch.nn.MultiheadAttention's computation (batch first), composed of
 * the operators its forward runs: the three input projections, the scaled
 * q·kᵀ per head, the (causal) mask, softmax, the product with v and the
 * output projection. */
at::Tensor attention(const Node *nd, const at::Tensor &xq, const at::Tensor &xk,
                     const at::Tensor &xv)
{
    const ntp_torch_layer &l = nd->l;
    int64_t N = xq.size(0), S = xq.size(1), D = xq.size(2), Skv = xk.size(1);
    int64_t h = l.heads, hd = D / h;
    const at::Tensor &in_proj = nd->w[0];
    int wi = 1;
    at::Tensor in_bias = l.bias ? nd->w[wi++] : at::Tensor();
    const at::Tensor &out_proj = nd->w[wi++];
    at::Tensor out_bias = l.bias ? nd->w[wi] : at::Tensor();
    auto bias_of = [&](int j) { return l.bias ? in_bias.narrow(0, j * D, D) : at::Tensor(); };
    at::Tensor q = at::linear(xq, in_proj.narrow(0, 0, D), bias_of(0));
    at::Tensor k = at::linear(xk, in_proj.narrow(0, D, D), bias_of(1));
    at::Tensor v = at::linear(xv, in_proj.narrow(0, 2 * D, D), bias_of(2));
    q = q.view({N, S, h, hd}).transpose(1, 2);
    k = k.view({N, Skv, h, hd}).transpose(1, 2);
    v = v.view({N, Skv, h, hd}).transpose(1, 2);
    q = q * (1.0 / std::sqrt((double)hd));
    at::Tensor s = at::matmul(q, k.transpose(-2, -1));
    if (l.causal) {
        at::Tensor mask = at::ones({S, Skv}, at::TensorOptions().dtype(at::kBool)).triu(1);
        s = s.masked_fill(mask, -std::numeric_limits<float>::infinity());
    }
    at::Tensor p = at::softmax(s, -1);
    at::Tensor c = at::matmul(p, v).transpose(1, 2).reshape({N, S, D});
    return at::linear(c, out_proj, out_bias);
}

at::Tensor binary(ntp_torch_op op, const at::Tensor &a, const at::Tensor &b)
{
    switch (op) {
    case NTP_TORCH_ADD: return at::add(a, b);
    case NTP_TORCH_MUL: return at::mul(a, b);
    case NTP_TORCH_SUB: return at::sub(a, b);
    case NTP_TORCH_DIV: return at::div(a, b);
    case NTP_TORCH_MAXIMUM: return at::maximum(a, b);
    default: return at::minimum(a, b);
    }
}

at::Tensor run(const State *s, const Node *nd, const std::vector<at::Tensor> &in)
{
    const ntp_torch_layer &l = nd->l;
    const at::Tensor &x = in[0];
    switch (l.op) {
    case NTP_TORCH_CONV:
    case NTP_TORCH_DECONV: return conv(l, nd->w, x);
    case NTP_TORCH_LINEAR: return at::linear(x, nd->w[0], l.bias ? nd->w[1] : at::Tensor());
    case NTP_TORCH_MATMUL:
        return at::matmul(l.transpose_a ? x.transpose(-2, -1) : x,
                          l.transpose_b ? in[1].transpose(-2, -1) : in[1]);
    case NTP_TORCH_MAXPOOL:
    case NTP_TORCH_AVGPOOL: return pool(l, x);
    case NTP_TORCH_GLOBAL_MAXPOOL:
    case NTP_TORCH_GLOBAL_AVGPOOL: return global_pool(l, x);
    case NTP_TORCH_BATCHNORM:
        return at::batch_norm(x, nd->w[0], nd->w[1], nd->w[2], nd->w[3], false, 0.1, l.epsilon,
                              true);
    case NTP_TORCH_LAYERNORM: {
        std::vector<int64_t> ns(x.sizes().begin() + l.axis, x.sizes().end());
        return at::layer_norm(x, ns, nd->w[0].view(ns), nd->w[1].view(ns), l.epsilon, true);
    }
    case NTP_TORCH_UNARY: return unary(l, x);
    case NTP_TORCH_SOFTMAX: return at::softmax(x, l.axis);
    case NTP_TORCH_LOG_SOFTMAX: return at::log_softmax(x, l.axis);
    case NTP_TORCH_ADD:
    case NTP_TORCH_MUL:
    case NTP_TORCH_SUB:
    case NTP_TORCH_DIV:
    case NTP_TORCH_MAXIMUM:
    case NTP_TORCH_MINIMUM: {
        at::Tensor r = binary(l.op, in[0], in[1]);
        for (size_t i = 2; i < in.size(); i++)
            r = binary(l.op, r, in[i]);
        return r;
    }
    case NTP_TORCH_CAT: return at::cat(in, l.axis);
    case NTP_TORCH_RESHAPE: return x.reshape(dims(l.out[0]));
    case NTP_TORCH_PERMUTE: return x.permute(first(l.perm, l.n_perm));
    case NTP_TORCH_LSTM:
    case NTP_TORCH_GRU:
    case NTP_TORCH_RNN_TANH:
    case NTP_TORCH_RNN_RELU: return rnn(nd, x);
    case NTP_TORCH_ATTENTION:
        return in.size() == 3 ? attention(nd, in[0], in[1], in[2]) : attention(nd, x, x, x);
    case NTP_TORCH_EMBEDDING: return at::embedding(nd->w[0], x);
    }
    (void)s;
    throw std::runtime_error("unknown operator");
}

/* --- the C interface ----------------------------------------------------------------- */

void describe(char *buf, size_t len)
{
    std::snprintf(buf, len, "libtorch %s", TORCH_VERSION);
}

int init(const ntp_torch_opts *o, void **state, char *err, size_t len)
{
    try {
        State *s = new State;
        s->threads = o->threads > 0 ? o->threads : 1;
        s->channels_last = o->channels_last;
        at::set_num_threads(s->threads);
        /* Inference: no autograd records, as under torch.inference_mode(). */
        *state = s;
        return 0;
    } catch (const std::exception &e) {
        fail(err, len, e.what());
        return -1;
    }
}

void release(void *state)
{
    delete static_cast<State *>(state);
}

int prepare(void *state, const ntp_torch_layer *l, void **node, char *err, size_t len)
{
    (void)state;
    Node *nd = nullptr;
    try {
        nd = new Node;
        nd->l = *l;
        for (int i = 0; i < l->n_w; i++)
            nd->w.push_back(wrap(l->w[i], l->w[i].data));
        if (l->op == NTP_TORCH_LSTM || l->op == NTP_TORCH_GRU || l->op == NTP_TORCH_RNN_TANH ||
            l->op == NTP_TORCH_RNN_RELU)
            prepare_rnn(nd);
        *node = nd;
        return 0;
    } catch (const std::exception &e) {
        delete nd;
        fail(err, len, e.what());
        return -1;
    }
}

void *out_handle(void *node, int i)
{
    return &static_cast<Node *>(node)->out[i];
}

int execute(void *state, void *node, const ntp_torch_io *io, char *err, size_t len)
{
    const State *s = static_cast<const State *>(state);
    Node *nd = static_cast<Node *>(node);
    const ntp_torch_layer &l = nd->l;
    try {
        c10::InferenceMode guard;
        std::vector<at::Tensor> in, plain;
        for (int i = 0; i < io->n_in; i++) {
            if (io->in_handle[i]) {
                in.push_back(static_cast<Handle *>(io->in_handle[i])->t);
                continue;
            }
            at::Tensor t = wrap(l.in[i], io->in[i]);
            plain.push_back(t);
            at::MemoryFormat f = format_for(s, t.dim());
            in.push_back(f == at::MemoryFormat::Contiguous ? t : t.contiguous(f));
        }
        at::Tensor r = run(s, nd, in);
        if (l.out_internal[0]) {
            /* A view into an engine buffer would outlive it (the arena
             * reuses the memory of a tensor after its last reader). */
            for (const at::Tensor &p : plain)
                if (r.is_alias_of(p)) {
                    r = r.clone(format_for(s, r.dim()));
                    break;
                }
            nd->out[0].t = r;
        } else {
            at::Tensor y = wrap(l.out[0], io->out[0]);
            if (!y.is_same(r))
                y.copy_(r);
        }
        return 0;
    } catch (const std::exception &e) {
        fail(err, len, e.what());
        return -1;
    }
}

void release_node(void *node)
{
    delete static_cast<Node *>(node);
}

struct Script {
    torch::jit::Module m;
};

int script_build(void *state, const char *source, int n_params, const ntp_torch_tensor *params,
                 void **module, char *err, size_t len)
{
    (void)state;
    Script *sc = nullptr;
    try {
        sc = new Script{torch::jit::Module("ntprof")};
        for (int i = 0; i < n_params; i++)
            sc->m.register_buffer("p" + std::to_string(i), wrap(params[i], params[i].data));
        sc->m.define(source);
        sc->m.eval();
        /* freeze folds the buffers into the graph as constants;
         * optimize_for_inference then folds conv + batch norm, converts
         * convolutions to MKL-DNN's layout where that pays, ... */
        sc->m = torch::jit::optimize_for_inference(sc->m);
        *module = sc;
        return 0;
    } catch (const std::exception &e) {
        delete sc;
        fail(err, len, e.what());
        return -1;
    }
}

int script_run(void *state, void *module, int n_in, const ntp_torch_tensor *in, int n_out,
               const ntp_torch_tensor *out, char *err, size_t len)
{
    (void)state;
    Script *sc = static_cast<Script *>(module);
    try {
        c10::InferenceMode guard;
        std::vector<c10::IValue> args;
        for (int i = 0; i < n_in; i++)
            args.emplace_back(wrap(in[i], in[i].data));
        c10::IValue r = sc->m.forward(args);
        std::vector<at::Tensor> outs;
        if (r.isTuple()) {
            for (const c10::IValue &v : r.toTupleRef().elements())
                outs.push_back(v.toTensor());
        } else {
            outs.push_back(r.toTensor());
        }
        if ((int)outs.size() != n_out)
            throw std::runtime_error("the script returned " + std::to_string(outs.size()) +
                                     " outputs, " + std::to_string(n_out) + " expected");
        for (int i = 0; i < n_out; i++)
            wrap(out[i], out[i].data).copy_(outs[(size_t)i].reshape(dims(out[i])));
        return 0;
    } catch (const std::exception &e) {
        fail(err, len, e.what());
        return -1;
    }
}

void script_free(void *module)
{
    delete static_cast<Script *>(module);
}

const ntp_torch_api api = {
    NTP_TORCH_API_VERSION, describe,     init,       release,     prepare, out_handle, execute,
    release_node,          script_build, script_run, script_free,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const ntp_torch_api *
ntp_torch_module_api(int version)
{
    return version == NTP_TORCH_API_VERSION ? &api : nullptr;
}
