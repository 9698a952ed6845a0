#!/usr/bin/python3
"""Regenerate the malformed-ONNX corpus (tests/onnx-malformed/*.onnx).

Each file breaks one thing a reader must check; test_onnx_malformed.c holds
the exact error each one must give. Built with the protobuf classes of
Debian's python3-onnx (onnx.onnx_pb), not onnx.helper, so that invalid
models can be written at all. Run with /usr/bin/python3 from this directory.
"""
import os
import struct

from onnx import onnx_pb as pb
from onnx import TensorProto

OPSET = 13


def model(nodes=(), inits=(), inputs=(), outputs=(), opset=OPSET, ir=7):
    m = pb.ModelProto()
    m.ir_version = ir
    o = m.opset_import.add()
    o.domain = ""
    o.version = opset
    g = m.graph
    g.name = "g"
    g.node.extend(nodes)
    g.initializer.extend(inits)
    g.input.extend(inputs)
    g.output.extend(outputs)
    return m


def vi(name, dims, dt=TensorProto.FLOAT):
    v = pb.ValueInfoProto()
    v.name = name
    t = v.type.tensor_type
    t.elem_type = dt
    if dims is not None:
        s = t.shape
        s.SetInParent()
        for d in dims:
            dim = s.dim.add()
            if isinstance(d, str):
                dim.dim_param = d
            else:
                dim.dim_value = d
    return v


def node(op, ins, outs, name="", **attrs):
    n = pb.NodeProto()
    n.op_type = op
    n.name = name
    n.input.extend(ins)
    n.output.extend(outs)
    for k, v in attrs.items():
        a = n.attribute.add()
        a.name = k
        if isinstance(v, int):
            a.type = pb.AttributeProto.INT
            a.i = v
        elif isinstance(v, float):
            a.type = pb.AttributeProto.FLOAT
            a.f = v
        elif isinstance(v, list) and all(isinstance(e, int) for e in v):
            a.type = pb.AttributeProto.INTS
            a.ints.extend(v)
        elif isinstance(v, list):
            a.type = pb.AttributeProto.FLOATS
            a.floats.extend(v)
    return n


def tensor(name, dims, dt=TensorProto.FLOAT, raw=None, floats=None):
    t = pb.TensorProto()
    t.name = name
    t.dims.extend(dims)
    if dt is not None:
        t.data_type = dt
    if raw is not None:
        t.raw_data = raw
    if floats is not None:
        t.float_data.extend(floats)
    return t


def relu_model(**kw):
    """x [1, 4] -> Relu -> y, the base most cases break."""
    return model(nodes=[node("Relu", ["x"], ["y"], "relu")], inputs=[vi("x", [1, 4])],
                 outputs=[vi("y", [1, 4])], **kw)


def add_model(init):
    """y = x + w with w an initializer."""
    return model(nodes=[node("Add", ["x", "w"], ["y"], "add")], inits=[init],
                 inputs=[vi("x", [4])], outputs=[vi("y", [4])])


def save(name, m):
    data = m if isinstance(m, bytes) else m.SerializeToString()
    with open(name + ".onnx", "wb") as f:
        f.write(data)


def main():
    four = struct.pack("<4f", 1, 2, 3, 4)
    save("01-empty", b"")
    good = add_model(tensor("w", [4], raw=four)).SerializeToString()
    save("02-truncated", good[: len(good) - 9])
    save("03-not-protobuf", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01garbage")
    save("04-tensor-file", tensor("t", [2], raw=struct.pack("<2f", 1, 2)).SerializeToString())
    m = relu_model()
    m.ClearField("ir_version")
    save("05-no-ir-version", m)
    save("06-negative-dim", add_model(tensor("w", [-4], raw=four)))
    save("07-overflowing-dims", add_model(tensor("w", [1 << 40, 1 << 40], raw=four)))
    save("08-raw-data-short", add_model(tensor("w", [4], raw=four[:8])))
    save("09-huge-declared-size", add_model(tensor("w", [1000000000000], raw=four)))
    w = tensor("w", [4])
    w.int64_data.extend([1, 2, 3, 4])
    save("10-wrong-typed-field", add_model(w))
    save("11-no-data-type", add_model(tensor("w", [4], dt=None, raw=four)))
    s = tensor("w", [1], dt=TensorProto.STRING)
    s.string_data.append(b"abc")
    save("12-string-tensor", add_model(s))
    # A graph attribute inside a graph attribute, 100 deep.
    inner = pb.GraphProto()
    inner.name = "g0"
    for i in range(100):
        n = pb.NodeProto()
        n.op_type = "If"
        a = n.attribute.add()
        a.name = "then_branch"
        a.type = pb.AttributeProto.GRAPH
        a.g.CopyFrom(inner)
        g = pb.GraphProto()
        g.name = "g%d" % (i + 1)
        g.node.append(n)
        inner = g
    m = relu_model()
    deep = m.graph.node.add()
    deep.CopyFrom(inner.node[0])
    save("13-deep-nesting", m)
    save("14-unsupported-nodes", model(
        nodes=[node("NonMaxSuppression", ["x", "x"], ["a"], "nms"), node("TopK", ["x", "k"], ["b", "c"], "topk"),
               node("Relu", ["x"], ["d"], "relu"), node("FancyOp", ["x"], ["e"], "fancy")],
        inits=[tensor("k", [1], TensorProto.INT64, raw=struct.pack("<q", 1))],
        inputs=[vi("x", [1, 4])], outputs=[vi("a", None), vi("b", None), vi("d", [1, 4]), vi("e", None)]))
    save("15-opset-too-new", relu_model(opset=18))
    save("16-cycle", model(nodes=[node("Relu", ["b"], ["a"], "r1"), node("Relu", ["a"], ["b"], "r2")],
                           inputs=[vi("x", [1, 4])], outputs=[vi("a", [1, 4])]))
    save("17-undefined-input", model(nodes=[node("Relu", ["nope"], ["y"], "relu")],
                                     inputs=[vi("x", [1, 4])], outputs=[vi("y", [1, 4])]))
    save("18-produced-twice", model(nodes=[node("Relu", ["x"], ["y"], "r1"), node("Sigmoid", ["x"], ["y"], "r2")],
                                    inputs=[vi("x", [1, 4])], outputs=[vi("y", [1, 4])]))
    e = tensor("w", [4])
    e.data_location = TensorProto.EXTERNAL
    loc = e.external_data.add()
    loc.key, loc.value = "location", "../outside.bin"
    save("19-external-escapes", add_model(e))
    e2 = tensor("w", [4])
    e2.data_location = TensorProto.EXTERNAL
    loc = e2.external_data.add()
    loc.key, loc.value = "location", "missing.bin"
    save("20-external-missing", add_model(e2))
    e3 = tensor("w", [4])
    e3.data_location = TensorProto.EXTERNAL
    loc = e3.external_data.add()
    loc.key, loc.value = "location", "short.bin"
    save("21-external-short", add_model(e3))
    m = relu_model()
    m.graph.input[0].type.tensor_type.ClearField("shape")
    save("22-input-without-shape", m)
    save("23-symbolic-dim", model(nodes=[node("Relu", ["x"], ["y"], "relu")], inputs=[vi("x", [1, "seq"])],
                                  outputs=[vi("y", None)]))
    save("24-zero-dim", model(nodes=[node("Relu", ["x"], ["y"], "relu")], inputs=[vi("x", [0, 4])],
                              outputs=[vi("y", None)]))
    save("25-output-undefined", model(nodes=[node("Relu", ["x"], ["y"], "relu")], inputs=[vi("x", [1, 4])],
                                      outputs=[vi("z", [1, 4])]))
    save("26-conv-channels", model(
        nodes=[node("Conv", ["x", "w"], ["y"], "conv")],
        inits=[tensor("w", [2, 3, 1, 1], floats=[0.5] * 6)],
        inputs=[vi("x", [1, 4, 5, 5])], outputs=[vi("y", None)]))
    save("27-too-many-dims", add_model(tensor("w", [1] * 9 + [4], raw=four)))
    save("28-integer-at-run-time", model(nodes=[node("Relu", ["x"], ["y"], "relu")],
                                         inputs=[vi("x", [1, 4], TensorProto.INT64)], outputs=[vi("y", None)]))
    save("29-unknown-attribute", model(nodes=[node("Relu", ["x"], ["y"], "relu", alpha=0.5)],
                                       inputs=[vi("x", [1, 4])], outputs=[vi("y", None)]))
    save("30-weights-at-run-time", model(
        nodes=[node("Conv", ["x", "w"], ["y"], "conv")],
        inputs=[vi("x", [1, 3, 5, 5]), vi("w", [2, 3, 1, 1])], outputs=[vi("y", None)]))
    e4 = tensor("w", [4])
    e4.data_location = TensorProto.EXTERNAL
    loc = e4.external_data.add()
    loc.key, loc.value = "location", "/etc/hostname"
    save("31-external-absolute", add_model(e4))
    sg = tensor("w", [4], raw=four)
    sg.segment.begin = 0
    sg.segment.end = 2
    save("32-segmented-tensor", add_model(sg))
    m = relu_model()
    sp = m.graph.sparse_initializer.add()
    sp.dims.extend([4])
    save("33-sparse-initializer", m)
    m = relu_model()
    m.graph.ClearField("output")
    save("34-no-outputs", m)
    save("35-memory-budget", model(nodes=[node("Relu", ["x"], ["y"], "relu")],
                                   inputs=[vi("x", [1 << 20, 1 << 20])], outputs=[vi("y", None)]))
    m = relu_model()
    m.ClearField("graph")
    save("36-no-graph", m)
    save("37-reshape-shape-at-run-time", model(
        nodes=[node("Reshape", ["x", "s"], ["y"], "reshape")],
        inputs=[vi("x", [2, 4]), vi("s", [2], TensorProto.INT64)], outputs=[vi("y", None)]))
    # A node with an input and no outputs (SiLU's matcher read output 0).
    save("38-node-without-outputs", model(
        nodes=[node("Relu", ["x"], ["y"], "relu"), node("Sigmoid", ["y"], [], "sig")],
        inputs=[vi("x", [1, 4])], outputs=[vi("y", [1, 4])]))
    conv_w = tensor("w", [1, 1, 3, 3], floats=[0.5] * 9)
    save("39-conv-huge-dilation", model(
        nodes=[node("Conv", ["x", "w"], ["y"], "conv", dilations=[1 << 62, 1])], inits=[conv_w],
        inputs=[vi("x", [1, 1, 5, 5])], outputs=[vi("y", None)]))
    save("40-conv-huge-pad", model(
        nodes=[node("Conv", ["x", "w"], ["y"], "conv", pads=[(1 << 63) - 1, 0, 0, 0])],
        inits=[conv_w], inputs=[vi("x", [1, 1, 5, 5])], outputs=[vi("y", None)]))
    save("41-pad-int64-min", model(
        nodes=[node("Pad", ["x", "p"], ["y"], "pad")],
        inits=[tensor("p", [4], TensorProto.INT64, raw=struct.pack("<4q", -(1 << 63), 0, 0, 0))],
        inputs=[vi("x", [1, 4])], outputs=[vi("y", None)]))
    save("42-pad-int64-max", model(
        nodes=[node("Pad", ["x", "p"], ["y"], "pad")],
        inits=[tensor("p", [4], TensorProto.INT64, raw=struct.pack("<4q", 0, (1 << 63) - 1, 0, 1))],
        inputs=[vi("x", [1, 4])], outputs=[vi("y", None)]))
    save("43-conv-float-strides", model(
        nodes=[node("Conv", ["x", "w"], ["y"], "conv", strides=[2.0, 2.0])], inits=[conv_w],
        inputs=[vi("x", [1, 1, 5, 5])], outputs=[vi("y", None)]))
    # 4 TiB declared, 8 bytes there: refused before allocating 4 TiB.
    e5 = tensor("w", [1 << 40])
    e5.data_location = TensorProto.EXTERNAL
    loc = e5.external_data.add()
    loc.key, loc.value = "location", "short.bin"
    save("44-external-short-huge", add_model(e5))
    # A float shape holding NaN (found by fuzz_onnx: converting it was UB).
    save("45-reshape-nan-shape", model(
        nodes=[node("Reshape", ["x", "s"], ["y"], "reshape")],
        inits=[tensor("s", [2], raw=struct.pack("<2f", float("nan"), 4.0)),
               tensor("x", [1, 4], raw=four)],
        outputs=[vi("y", None)], opset=6))
    # Found by fuzz_onnx: negating INT64_MIN while folding Neg (undefined
    # behaviour; ONNX runtimes give INT64_MIN), and a Range whose elements
    # pass int64 (refused).
    save("46-neg-int64-min", model(
        nodes=[node("Neg", ["p"], ["y"], "neg")],
        inits=[tensor("p", [1], TensorProto.INT64, raw=struct.pack("<q", -(1 << 63)))],
        outputs=[vi("y", None)]))
    save("47-range-int64-overflow", model(
        nodes=[node("Range", ["s", "l", "d"], ["y"], "range")],
        inits=[tensor("s", [], TensorProto.INT64, raw=struct.pack("<q", -(1 << 63))),
               tensor("l", [], TensorProto.INT64, raw=struct.pack("<q", (1 << 63) - 1)),
               tensor("d", [], TensorProto.INT64, raw=struct.pack("<q", 1 << 62))],
        outputs=[vi("y", None)]))
    # Found by fuzz_onnx: a Range whose delta is empty was read past its
    # end while folding; a Clip's min or max must hold one value too.
    save("48-range-empty-delta", model(
        nodes=[node("Range", ["s", "l", "d"], ["y"], "range")],
        inits=[tensor("s", [], TensorProto.INT64, raw=struct.pack("<q", 0)),
               tensor("l", [], TensorProto.INT64, raw=struct.pack("<q", 4)),
               tensor("d", [0], TensorProto.INT64, raw=b"")],
        outputs=[vi("y", None)]))
    save("49-clip-two-min", model(
        nodes=[node("Clip", ["a", "lo"], ["y"], "clip")],
        inits=[tensor("a", [2], raw=struct.pack("<2f", 1.0, 2.0)),
               tensor("lo", [2], raw=struct.pack("<2f", 0.0, 0.5))],
        outputs=[vi("y", None)]))
    with open("short.bin", "wb") as f:
        f.write(four[:8])


if __name__ == "__main__":
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    main()
