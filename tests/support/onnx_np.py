"""A small ONNX interpreter in numpy for the operators ntprof writes for a
decoder (tests/test_onnx_kv.sh): written from the ONNX operator
specification (opset 17), sharing no code with ntprof, so that an exported
model's meaning is checked by something ntprof did not compute. Debian's
onnx 1.12 has no onnx.reference evaluator. Only what these models use is
here; anything else raises."""
import math

import numpy as np
from onnx import numpy_helper


def _attrs(node):
    import onnx
    out = {}
    for a in node.attribute:
        out[a.name] = onnx.helper.get_attribute_value(a)
    return out


def _erf(x):
    v = np.vectorize(math.erf, otypes=[np.float64])
    return v(x.astype(np.float64)).astype(x.dtype)


def run(model, feeds, dtype=np.float64):
    """Evaluate model (an onnx ModelProto) on feeds {name: array}; floats
    are computed in `dtype`. Returns {output name: array}."""
    env = {}
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t)
        env[t.name] = a.astype(dtype) if a.dtype.kind == "f" else a
    for k, v in feeds.items():
        env[k] = v.astype(dtype) if v.dtype.kind == "f" else v
    for n in model.graph.node:
        a = _attrs(n)
        x = [env[i] if i else None for i in n.input]
        op = n.op_type
        if op == "Constant":
            y = numpy_helper.to_array(a["value"])
            y = y.astype(dtype) if y.dtype.kind == "f" else y
        elif op == "Gather":
            y = np.take(x[0], x[1].astype(np.int64), axis=a.get("axis", 0))
        elif op in ("Add", "Sub", "Mul", "Div"):
            f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
            y = f(x[0], x[1])
            if y.dtype.kind == "i" and op == "Div":
                y = x[0] // x[1]
        elif op == "MatMul":
            y = np.matmul(x[0], x[1])
        elif op == "Transpose":
            y = np.transpose(x[0], a["perm"])
        elif op == "Reshape":
            shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(x[1].tolist())]
            y = x[0].reshape(shape)
        elif op == "Concat":
            y = np.concatenate(x, axis=a["axis"])
        elif op == "Softmax":
            ax = a.get("axis", -1)
            e = np.exp(x[0] - x[0].max(axis=ax, keepdims=True))
            y = e / e.sum(axis=ax, keepdims=True)
        elif op == "LayerNormalization":
            ax = a.get("axis", -1)
            axes = tuple(range(ax % x[0].ndim, x[0].ndim))
            mu = x[0].mean(axis=axes, keepdims=True)
            var = ((x[0] - mu) ** 2).mean(axis=axes, keepdims=True)
            y = (x[0] - mu) / np.sqrt(var + a.get("epsilon", 1e-5)) * x[1]
            if len(x) > 2 and x[2] is not None:
                y = y + x[2]
        elif op == "Erf":
            y = _erf(x[0])
        elif op == "Sigmoid":
            y = 1 / (1 + np.exp(-x[0]))
        elif op == "Neg":
            y = -x[0]
        elif op == "Sqrt":
            y = np.sqrt(x[0])
        elif op == "ReduceMean":
            y = x[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1)))
        elif op == "Slice":
            sl = [slice(None)] * x[0].ndim
            axes = x[3].tolist() if len(x) > 3 else list(range(len(x[1])))
            steps = x[4].tolist() if len(x) > 4 else [1] * len(axes)
            for s, e, ax, st in zip(x[1].tolist(), x[2].tolist(), axes, steps):
                sl[ax] = slice(s, e, st)
            y = x[0][tuple(sl)]
        elif op == "Unsqueeze":
            y = x[0]
            for ax in sorted(int(v) % (x[0].ndim + len(x[1])) for v in x[1].tolist()):
                y = np.expand_dims(y, ax)
        elif op == "Squeeze":
            y = np.squeeze(x[0], axis=tuple(x[1].tolist()) if len(x) > 1 else None)
        elif op == "Shape":
            s = list(x[0].shape)
            y = np.array(s[a.get("start", 0):a.get("end", len(s))], dtype=np.int64)
        elif op == "Range":
            y = np.arange(x[0], x[1], x[2]).astype(np.int64)
        elif op == "Greater":
            y = np.greater(x[0], x[1])
        elif op == "Where":
            y = np.where(x[0], x[1], x[2])
        elif op == "Cast":
            to = a["to"]
            kinds = {1: dtype, 11: dtype, 6: np.int32, 7: np.int64, 9: np.bool_}
            if to not in kinds:
                raise NotImplementedError("Cast to %d" % to)
            y = x[0].astype(kinds[to])
        elif op == "Tile":
            y = np.tile(x[0], x[1].tolist())
        elif op == "ArgMax":
            assert a.get("select_last_index", 0) == 0
            y = np.argmax(x[0], axis=a.get("axis", 0)).astype(np.int64)
            if a.get("keepdims", 1):
                y = np.expand_dims(y, a.get("axis", 0))
        else:
            raise NotImplementedError("operator %s" % op)
        env[n.output[0]] = y
    return {o.name: env[o.name] for o in model.graph.output}
