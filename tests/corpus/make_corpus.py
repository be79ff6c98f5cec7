#!/usr/bin/env python3
"""Writes the malformed-model corpus (tests/corpus/*.onnx) and expected.txt.

Each file is a small, hand-encoded ONNX ModelProto with exactly one defect
(or none, for the files that must load). expected.txt lists, one per line,
`<file> <status name> [<message substring>]`; tests/c/test_corpus.c loads
every file and checks both. Deterministic: rerunning rewrites identical bytes.

Python 3 standard library only (the protobuf wire format is encoded by hand).
"""

import os
import random
import struct
import sys

# ---- protobuf wire format --------------------------------------------------


def varint(v):
    if v < 0:
        v += 1 << 64  # int64 fields encode negatives as 10-byte two's complement
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire):
    return varint(field << 3 | wire)


def f_int(field, v):
    return tag(field, 0) + varint(v)


def f_bytes(field, b):
    return tag(field, 2) + varint(len(b)) + b


def f_str(field, s):
    return f_bytes(field, s.encode())


def f_float(field, x):
    return tag(field, 5) + struct.pack("<f", x)


def f_packed_int(field, values):
    return f_bytes(field, b"".join(varint(v) for v in values))


def f_packed_float(field, values):
    return f_bytes(field, b"".join(struct.pack("<f", v) for v in values))


# ---- ONNX messages (field numbers from onnx.proto) -------------------------

FLOAT, UINT8, INT8, INT32, INT64, STRING = 1, 2, 3, 6, 7, 8
ATTR_INT, ATTR_GRAPH, ATTR_INTS = 2, 5, 7
INT64_MAX = (1 << 63) - 1


def tensor(name, dtype, dims, raw=None, floats=None, extra=b""):
    out = f_packed_int(1, dims) if dims else b""
    out += f_int(2, dtype)
    if floats is not None:
        out += f_packed_float(4, floats)
    out += f_str(8, name)
    if raw is not None:
        out += f_bytes(9, raw)
    return out + extra


def float_tensor(name, dims, value=0.5):
    n = 1
    for d in dims:
        n *= d
    return tensor(name, FLOAT, dims, raw=struct.pack("<%df" % n, *([value] * n)))


def value_info(name, elem_type=FLOAT, dims=None):
    shape = b""
    for d in dims or []:
        shape += f_bytes(1, f_str(2, d) if isinstance(d, str) else f_int(1, d))
    ttype = f_int(1, elem_type) + (f_bytes(2, shape) if dims is not None else b"")
    return f_str(1, name) + f_bytes(2, f_bytes(1, ttype))


def attr_int(name, v):
    return f_str(1, name) + f_int(3, v) + f_int(20, ATTR_INT)


def attr_ints(name, values):
    return f_str(1, name) + b"".join(f_int(8, v) for v in values) + f_int(20, ATTR_INTS)


def attr_graph(name, g):
    return f_str(1, name) + f_bytes(6, g) + f_int(20, ATTR_GRAPH)


def node(op, inputs, outputs, name=None, domain=None, attrs=()):
    out = b"".join(f_str(1, i) for i in inputs)
    out += b"".join(f_str(2, o) for o in outputs)
    if name is not None:
        out += f_str(3, name)
    out += f_str(4, op)
    out += b"".join(f_bytes(5, a) for a in attrs)
    if domain is not None:
        out += f_str(7, domain)
    return out


def graph(nodes, inputs, outputs, initializers=(), name="g", value_infos=(), extra=b""):
    out = b"".join(f_bytes(1, n) for n in nodes)
    out += f_str(2, name)
    out += b"".join(f_bytes(5, t) for t in initializers)
    out += b"".join(f_bytes(11, v) for v in inputs)
    out += b"".join(f_bytes(12, v) for v in outputs)
    out += b"".join(f_bytes(13, v) for v in value_infos)
    return out + extra


def model(g, opsets=(("", 13),), ir_version=8):
    out = f_int(1, ir_version) + f_str(2, "wasmq-corpus") + f_str(3, "1")
    if g is not None:
        out += f_bytes(7, g)
    out += b"".join(f_bytes(8, f_str(1, d) + f_int(2, v)) for d, v in opsets)
    return out


def relu_model(extra_nodes=(), x="X", y="Y"):
    """X float[2,3] -> Relu -> Y, the valid base most cases perturb."""
    nodes = [node("Relu", [x], [y], name="relu")] + list(extra_nodes)
    return graph(nodes, [value_info("X", FLOAT, [2, 3])], [value_info(y, FLOAT, [2, 3])])


# ---- the corpus ---------------------------------------------------------------


def build():
    cases = []  # (file, bytes, status, substring)

    def add(name, data, status, substring=""):
        cases.append((name, data, status, substring))

    good = model(
        graph(
            [node("Add", ["X", "W"], ["S"], name="add"), node("Relu", ["S"], ["Y"], name="relu")],
            [value_info("X", FLOAT, [2, 3])],
            [value_info("Y", FLOAT, [2, 3])],
            initializers=[float_tensor("W", [2, 3])],
        )
    )
    # Cut inside the graph: its length prefix promises more than is left.
    add("truncated.onnx", good[: len(good) * 2 // 3], "WQ_ERR_PARSE", "runs past the end")
    add("empty.onnx", b"", "WQ_ERR_INVALID_MODEL", "not an ONNX model (the file is empty)")

    rng = random.Random(20261122)
    # Starts with tag 0x07 (field 0), so the very first read fails.
    add("random_bytes.onnx", b"\x07" + bytes(rng.randrange(256) for _ in range(511)),
        "WQ_ERR_PARSE", "invalid field number")

    add("unknown_op.onnx",
        model(graph([node("FancyOp", ["X"], ["Y"], name="fancy_node")],
                    [value_info("X", FLOAT, [2])], [value_info("Y", FLOAT, [2])])),
        "WQ_ERR_UNSUPPORTED", "FancyOp")

    add("cycle.onnx",
        model(graph([node("Relu", ["B"], ["A"], name="first"),
                     node("Relu", ["A"], ["B"], name="second"),
                     node("Add", ["X", "B"], ["Y"], name="sum")],
                    [value_info("X", FLOAT, [2])], [value_info("Y", FLOAT, [2])])),
        "WQ_ERR_INVALID_MODEL", "cycle")

    add("dangling_tensor.onnx",
        model(graph([node("Add", ["X", "nowhere"], ["Y"], name="add")],
                    [value_info("X", FLOAT, [2])], [value_info("Y", FLOAT, [2])])),
        "WQ_ERR_INVALID_MODEL", "'nowhere'")

    # 2^32 * 2^32 * 2^32 elements overflow int64; no data needed to notice.
    add("overflow_dims.onnx",
        model(relu_model() + f_bytes(5, tensor("huge", FLOAT, [1 << 32, 1 << 32, 1 << 32]))),
        "WQ_ERR_SHAPE", "element count overflows")

    add("negative_dim.onnx",
        model(relu_model() + f_bytes(5, tensor("neg", FLOAT, [-3, 2], raw=b""))),
        "WQ_ERR_SHAPE", "negative")

    # Valid: an empty [0,3] initializer added to an empty [0,3] input.
    add("zero_size_dim.onnx",
        model(graph([node("Add", ["X", "W"], ["Y"], name="add")],
                    [value_info("X", FLOAT, [0, 3])], [value_info("Y", FLOAT, [0, 3])],
                    initializers=[tensor("W", FLOAT, [0, 3], raw=b"")])),
        "WQ_OK")

    add("data_length_mismatch.onnx",
        model(graph([node("Add", ["X", "W"], ["Y"], name="add")],
                    [value_info("X", FLOAT, [2, 3])], [value_info("Y", FLOAT, [2, 3])],
                    initializers=[tensor("W", FLOAT, [2, 3], raw=bytes(20))])),
        "WQ_ERR_INVALID_MODEL", "raw_data has 20 bytes but shape [2,3] of float needs 24 bytes")

    add("typed_count_mismatch.onnx",
        model(graph([node("Add", ["X", "W"], ["Y"], name="add")],
                    [value_info("X", FLOAT, [2, 3])], [value_info("Y", FLOAT, [2, 3])],
                    initializers=[tensor("W", FLOAT, [2, 3], floats=[1, 2, 3, 4, 5])])),
        "WQ_ERR_INVALID_MODEL", "float_data has 5 values but shape [2,3] of float needs 6")

    external = f_bytes(13, f_str(1, "location") + f_str(2, "weights.bin")) + f_int(14, 1)
    add("external_data.onnx",
        model(graph([node("Add", ["X", "W"], ["Y"], name="add")],
                    [value_info("X", FLOAT, [2, 3])], [value_info("Y", FLOAT, [2, 3])],
                    initializers=[tensor("W", FLOAT, [2, 3], extra=external)])),
        "WQ_ERR_UNSUPPORTED", "tensor 'W' uses external data, which is not supported")

    add("produced_twice.onnx",
        model(graph([node("Relu", ["X"], ["Y"], name="one"), node("Relu", ["X"], ["Y"], name="two")],
                    [value_info("X", FLOAT, [2])], [value_info("Y", FLOAT, [2])])),
        "WQ_ERR_INVALID_MODEL", "produced twice")

    add("writes_initializer.onnx",
        model(graph([node("Relu", ["X"], ["W"], name="clobber")],
                    [value_info("X", FLOAT, [2])], [value_info("W", FLOAT, [2])],
                    initializers=[float_tensor("W", [2])])),
        "WQ_ERR_INVALID_MODEL", "is an initializer")

    add("no_graph.onnx", model(None), "WQ_ERR_INVALID_MODEL", "no graph")

    add("opset_too_old.onnx", model(relu_model(), opsets=(("", 6),)),
        "WQ_ERR_UNSUPPORTED", "opset version 6 is not supported")
    add("opset_too_new.onnx", model(relu_model(), opsets=(("", 26),)),
        "WQ_ERR_UNSUPPORTED", "opset version 26 is not supported")

    add("missing_domain_opset.onnx",
        model(graph([node("Relu", ["X"], ["Y"], name="custom", domain="com.example")],
                    [value_info("X", FLOAT, [2])], [value_info("Y", FLOAT, [2])])),
        "WQ_ERR_INVALID_MODEL", "imports no opset")

    # ir_version given as an 11-byte varint, then one whose 10th byte
    # carries bits beyond 64.
    add("varint_too_long.onnx", f_int(1, 0)[:1] + b"\xff" * 9 + b"\x81\x00",
        "WQ_ERR_PARSE", "varint is longer than 10 bytes")
    add("varint_overflow.onnx", f_int(1, 0)[:1] + b"\xff" * 9 + b"\x7f",
        "WQ_ERR_PARSE", "varint overflows 64 bits")

    # 200 If nodes, each nesting the next graph in its then_branch.
    inner = relu_model()
    for level in range(200):
        inner = graph([node("If", ["cond"], ["Y"], name="if%d" % level,
                            attrs=[attr_graph("then_branch", inner),
                                   attr_graph("else_branch", relu_model())])],
                      [value_info("cond", 9, [])], [value_info("Y", FLOAT, [2, 3])])
    add("depth_bomb.onnx", model(inner), "WQ_ERR_PARSE", "nested deeper than")

    # GraphProto.node (field 1) encoded as a varint instead of a message.
    add("wrong_wire_type.onnx",
        model(f_int(1, 5) + relu_model()), "WQ_ERR_PARSE", "GraphProto.node")

    add("sparse_initializer.onnx",
        model(relu_model() + f_bytes(15, f_bytes(1, float_tensor("sv", [1])))),
        "WQ_ERR_UNSUPPORTED", "sparse_initializer")

    add("string_tensor.onnx",
        model(relu_model() + f_bytes(5, f_packed_int(1, [1]) + f_int(2, STRING) + f_str(6, "hi")
                                     + f_str(8, "words"))),
        "WQ_ERR_UNSUPPORTED", "dtype string is not supported")

    add("rank_too_big.onnx",
        model(relu_model() + f_bytes(5, tensor("deep", FLOAT, [1] * 9, raw=bytes(4)))),
        "WQ_ERR_UNSUPPORTED", "rank 9")

    add("bad_data_type.onnx",
        model(relu_model() + f_bytes(5, tensor("odd", 99, [1], raw=bytes(1)))),
        "WQ_ERR_INVALID_MODEL", "invalid data_type 99")

    add("output_not_produced.onnx",
        model(graph([node("Relu", ["X"], ["Y"], name="relu")],
                    [value_info("X", FLOAT, [2])], [value_info("Z", FLOAT, [2])])),
        "WQ_ERR_INVALID_MODEL", "graph output 'Z'")

    # Valid: nodes listed consumer-first; the importer must sort them.
    add("unsorted_nodes.onnx",
        model(graph([node("Relu", ["S"], ["Y"], name="second"),
                     node("Add", ["X", "X"], ["S"], name="first")],
                    [value_info("X", FLOAT, [2, 3])], [value_info("Y", FLOAT, [2, 3])])),
        "WQ_OK")

    add_geometry_cases(add)
    return cases


# ---- edge values of geometry attributes (issue #12) ---------------------------
# Each `run` case loads, then runs once on tests/c/seeded_run.h's inputs;
# `same-as F` compares the outputs with F's bit for bit. Pairs differ only in
# a stride that cannot matter (one output column either way).


def dw_weights(c):
    return [((i * 7) % 11 - 5) / 4 for i in range(c * 9)]


def float_conv(dims, strides, pads, group, dilations=None, op="Conv"):
    c = dims[1]
    cin = 1 if group == c else c
    w = dw_weights(c * cin)
    attrs = [attr_ints("strides", strides), attr_ints("pads", pads)]
    if op == "Conv":
        attrs.append(attr_int("group", group))
    if dilations:
        attrs.append(attr_ints("dilations", dilations))
    inputs = ["X", "W"]
    inits = [tensor("W", FLOAT, [c, cin, 3, 3], raw=struct.pack("<%df" % len(w), *w))]
    if op != "Conv":
        attrs.append(attr_ints("kernel_shape", [3, 3]))
        inputs, inits = ["X"], []
    return model(graph([node(op, inputs, ["Y"], name="window", attrs=attrs)],
                       [value_info("X", FLOAT, list(dims))], [value_info("Y", FLOAT, None)],
                       initializers=inits))


def scalar(name, dtype, value):
    fmt = {FLOAT: "<f", UINT8: "<B", INT8: "<b", INT32: "<i"}[dtype]
    return tensor(name, dtype, [], raw=struct.pack(fmt, value))


def qlinear_dw_conv(stride_w, c=8):
    w = [((i * 5) % 13) - 6 for i in range(c * 9)]
    inits = [scalar("xs", FLOAT, 0.05), scalar("xz", UINT8, 128),
             tensor("W", INT8, [c, 1, 3, 3], raw=struct.pack("<%db" % len(w), *w)),
             scalar("ws", FLOAT, 0.02), scalar("wz", INT8, 0),
             scalar("ys", FLOAT, 0.1), scalar("yz", UINT8, 120)]
    attrs = [attr_ints("strides", [1, stride_w]), attr_ints("pads", [1, 1, 1, 1]),
             attr_int("group", c)]
    return model(graph([node("QLinearConv", ["X", "xs", "xz", "W", "ws", "wz", "ys", "yz"], ["Y"],
                             name="qdw", attrs=attrs)],
                       [value_info("X", UINT8, [1, c, 6, 16])], [value_info("Y", UINT8, None)],
                       initializers=inits))


def qdq_dw_conv(stride_w, c=8, bias=None):
    """The same depthwise conv as QDQ (lowered to the int8 kernels); bias: c floats."""
    w = [((i * 5) % 13) - 6 for i in range(c * 9)]
    inits = [scalar("xs", FLOAT, 0.05), scalar("xz", UINT8, 128),
             tensor("Wq", INT8, [c, 1, 3, 3], raw=struct.pack("<%db" % len(w), *w)),
             scalar("ws", FLOAT, 0.02), scalar("wz", INT8, 0),
             scalar("ys", FLOAT, 0.1), scalar("yz", UINT8, 120)]
    if bias:
        inits.append(f32_tensor("B", bias))
    attrs = [attr_ints("strides", [1, stride_w]), attr_ints("pads", [1, 1, 1, 1]),
             attr_int("group", c)]
    nodes = [node("QuantizeLinear", ["X", "xs", "xz"], ["Xq"], name="qx"),
             node("DequantizeLinear", ["Xq", "xs", "xz"], ["Xf"], name="dqx"),
             node("DequantizeLinear", ["Wq", "ws", "wz"], ["Wf"], name="dqw"),
             node("Conv", ["Xf", "Wf"] + (["B"] if bias else []), ["Yf"], name="conv", attrs=attrs),
             node("QuantizeLinear", ["Yf", "ys", "yz"], ["Yq"], name="qy"),
             node("DequantizeLinear", ["Yq", "ys", "yz"], ["Y"], name="dqy")]
    return model(graph(nodes, [value_info("X", FLOAT, [1, c, 6, 16])],
                       [value_info("Y", FLOAT, None)], initializers=inits))


def i64_tensor(name, values):
    return tensor(name, INT64, [len(values)], raw=struct.pack("<%dq" % len(values), *values))


def f32_tensor(name, values):
    return tensor(name, FLOAT, [len(values)], raw=struct.pack("<%df" % len(values), *values))


def one_op(op, attrs=(), extra_inputs=(), inits=(), outputs=("Y",)):
    """X float[1,4,6,6] -> op -> outputs, attributes and initializers given."""
    return model(graph([node(op, ["X"] + list(extra_inputs), list(outputs), name="n",
                              attrs=list(attrs))],
                       [value_info("X", FLOAT, [1, 4, 6, 6])],
                       [value_info(o, FLOAT, None) for o in outputs], initializers=list(inits)))


def add_integer_attribute_cases(add):
    """int64 edge values (INT64_MIN/MAX, 2^32, 2^62) in integer attributes and
    integer inputs other than conv geometry: each a clear error naming the
    node's op and the value, or (Slice) an empty result."""
    imin = -INT64_MAX - 1
    w = tensor("W", FLOAT, [4, 1, 3, 3], raw=bytes(4 * 36))
    cases = [
        ("depthtospace_blocksize_int64_max", one_op("DepthToSpace", [attr_int("blocksize", INT64_MAX)]),
         "WQ_ERR_SHAPE", "blocksize 9223372036854775807 is invalid"),
        ("depthtospace_blocksize_2p32", one_op("DepthToSpace", [attr_int("blocksize", 1 << 32)]),
         "WQ_ERR_SHAPE", "blocksize 4294967296 is invalid"),
        ("gather_index_int64_max", one_op("Gather", [attr_int("axis", 1)], ["I"],
                                          [i64_tensor("I", [INT64_MAX, 1])]),
         "WQ_ERR_SHAPE", "index 9223372036854775807"),
        ("gather_index_int64_min", one_op("Gather", [attr_int("axis", 1)], ["I"],
                                          [i64_tensor("I", [imin, 1])]),
         "WQ_ERR_SHAPE", "index -9223372036854775808"),
        ("gather_axis_int64_max", one_op("Gather", [attr_int("axis", INT64_MAX)], ["I"],
                                         [i64_tensor("I", [0])]),
         "WQ_ERR_SHAPE", "axis 9223372036854775807 is out of range"),
        ("slice_axes_int64_max", one_op("Slice", [], ["s", "e", "a"],
                                        [i64_tensor("s", [0]), i64_tensor("e", [2]),
                                         i64_tensor("a", [INT64_MAX])]),
         "WQ_ERR_SHAPE", "axes 9223372036854775807"),
        ("conv_group_int64_max", one_op("Conv", [attr_int("group", INT64_MAX)], ["W"], [w]),
         "WQ_ERR_INVALID_MODEL", "group is 9223372036854775807"),
        # Found by fuzz_structured: W.shape[1] * group overflowed in the channel check.
        ("conv_group_2p62", one_op("Conv", [attr_int("group", 1 << 62)], ["W"], [w]),
         "WQ_ERR_INVALID_MODEL", "group is 4611686018427387904"),
        ("conv_group_int64_min", one_op("Conv", [attr_int("group", imin)], ["W"], [w]),
         "WQ_ERR_INVALID_MODEL", "group is -9223372036854775808"),
        ("concat_axis_int64_min", one_op("Concat", [attr_int("axis", imin)], ["X"]),
         "WQ_ERR_SHAPE", "axis -9223372036854775808"),
        ("softmax_axis_int64_min", one_op("Softmax", [attr_int("axis", imin)]),
         "WQ_ERR_INVALID_MODEL", "axis -9223372036854775808"),
        ("flatten_axis_int64_max", one_op("Flatten", [attr_int("axis", INT64_MAX)]),
         "WQ_ERR_SHAPE", "axis 9223372036854775807"),
        ("transpose_perm_int64_max", one_op("Transpose", [attr_ints("perm", [0, 1, 2, INT64_MAX])]),
         "WQ_ERR_SHAPE", "is not a permutation"),
        ("unsqueeze_axes_int64_max", one_op("Unsqueeze", [], ["a"], [i64_tensor("a", [INT64_MAX])]),
         "WQ_ERR_SHAPE", "axes 9223372036854775807"),
        ("reshape_int64_max", one_op("Reshape", [], ["sh"], [i64_tensor("sh", [INT64_MAX, INT64_MAX])]),
         "WQ_ERR_SHAPE", "cannot reshape"),
        ("split_int64_min", one_op("Split", [attr_int("axis", 1)], ["sp"], [i64_tensor("sp", [imin, 4])],
                                   outputs=("Y", "Z")),
         "WQ_ERR_SHAPE", "is negative"),
        ("pad_int64_max", one_op("Pad", [], ["p"], [i64_tensor("p", [0, 0, 0, INT64_MAX, 0, 0, 0, 1])]),
         "WQ_ERR_SHAPE", "too large"),
        ("reducemean_axes_int64_min", one_op("ReduceMean", [attr_ints("axes", [imin])]),
         "WQ_ERR_INVALID_MODEL", "axis -9223372036854775808"),
        ("maxpool_kernel_int64_max", one_op("MaxPool", [attr_ints("kernel_shape", [1, INT64_MAX])]),
         "WQ_ERR_INVALID_MODEL", "kernel_shape[1] is 9223372036854775807"),
        ("convtranspose_stride_int64_max",
         one_op("ConvTranspose", [attr_ints("strides", [INT64_MAX, 1])], ["W"], [w]),
         "WQ_ERR_SHAPE", "output size overflows"),
        ("convtranspose_output_shape_int64_max",
         one_op("ConvTranspose", [attr_ints("output_shape", [INT64_MAX, 6])], ["W"], [w]),
         "WQ_ERR_SHAPE", "output size overflows"),
        ("resize_scale_1e30", one_op("Resize", [], ["roi", "sc"],
                                     [f32_tensor("roi", []), f32_tensor("sc", [1, 1, 1e30, 1])]),
         "WQ_ERR_SHAPE", "scales[2] = 1e+30"),
        ("resize_scale_inf", one_op("Resize", [], ["roi", "sc"],
                                    [f32_tensor("roi", []), f32_tensor("sc", [1, 1, float("inf"), 1])]),
         "WQ_ERR_SHAPE", "scales[2] = inf"),
        ("resize_sizes_int64_max", one_op("Resize", [], ["roi", "sc", "sz"],
                                          [f32_tensor("roi", []), f32_tensor("sc", []),
                                           i64_tensor("sz", [1, 4, INT64_MAX, 6])]),
         "WQ_ERR_SHAPE", "element count overflows"),
    ]
    for name, data, status, substring in cases:
        add(name + ".onnx", data, status, substring)
    # Valid: steps and starts at the int64 edges clamp to an empty slice.
    add("slice_step_int64_min.onnx",
        one_op("Slice", [], ["s", "e", "a", "st"],
               [i64_tensor("s", [imin]), i64_tensor("e", [imin]), i64_tensor("a", [2]),
                i64_tensor("st", [imin])]), "WQ_OK", "run")
    add("slice_start_int64_max.onnx",
        one_op("Slice", [], ["s", "e", "a", "st"],
               [i64_tensor("s", [INT64_MAX]), i64_tensor("e", [INT64_MAX]), i64_tensor("a", [3]),
                i64_tensor("st", [INT64_MAX])]), "WQ_OK", "run")
    # Found by fuzz_load: sizes 0 on a non-empty axis (scale 0, which
    # onnxruntime refuses) gave an empty output, and building the coordinate
    # table of its other axes took seconds (here 2^28 entries, 2 GiB).
    add("resize_sizes_zero.onnx",
        one_op("Resize", [], ["roi", "sc", "sz"],
               [f32_tensor("roi", []), f32_tensor("sc", []), i64_tensor("sz", [1, 0, 1 << 28, 6])]),
        "WQ_ERR_INVALID_MODEL", "sizes[1] = 0 is invalid for input dim 4")
    # Found by fuzz_load (a timeout): a denormal scale (> 0, so valid) makes
    # the channel axis empty; the other axis's 2^28-entry table took the time.
    add("resize_scale_denormal.onnx",
        one_op("Resize", [], ["roi", "sc"],
               [f32_tensor("roi", []), f32_tensor("sc", [1, 1e-40, 44739242, 1])]),
        "WQ_OK", "run")
    # An empty input axis may stay empty: nothing to compute, at once.
    add("resize_empty_axis_2p28.onnx",
        model(graph([node("Resize", ["X", "roi", "sc", "sz"], ["Y"], name="n")],
                    [value_info("X", FLOAT, [1, 0, 6, 6])], [value_info("Y", FLOAT, None)],
                    initializers=[f32_tensor("roi", []), f32_tensor("sc", []),
                                  i64_tensor("sz", [1, 0, 1 << 28, 6])])),
        "WQ_OK", "run")


def add_geometry_cases(add):
    dw = [1, 8, 26, 16]
    add("conv_dw_stride_300.onnx", float_conv(dw, [1, 300], [2] * 4, 8), "WQ_OK", "run")
    add("conv_dw_stride_int64_max.onnx", float_conv(dw, [1, INT64_MAX], [2] * 4, 8), "WQ_OK",
        "run same-as conv_dw_stride_300.onnx")
    add("conv_stride_300.onnx", float_conv([1, 3, 26, 16], [1, 300], [2] * 4, 1), "WQ_OK", "run")
    add("conv_stride_int64_max.onnx", float_conv([1, 3, 26, 16], [1, INT64_MAX], [2] * 4, 1),
        "WQ_OK", "run same-as conv_stride_300.onnx")
    # Found by fuzz_load: the left pad (39) lies past every window of the one
    # output column, so the padded copy has no input column to take.
    add("conv_pad_past_window.onnx", float_conv([1, 3, 26, 16], [1, 300], [64, 39, 2, 2], 1),
        "WQ_OK", "run")
    add("conv_stride_both_int64_max.onnx",
        float_conv([1, 3, 26, 16], [INT64_MAX, INT64_MAX], [2] * 4, 1), "WQ_OK", "run")
    add("conv_pads_2p30.onnx", float_conv(dw, [1, 1], [1 << 30] * 4, 8),
        "WQ_ERR_INVALID_MODEL", "attribute pads[0] is 1073741824")
    add("conv_pads_int64_max.onnx", float_conv(dw, [1, 1], [INT64_MAX] * 4, 8),
        "WQ_ERR_INVALID_MODEL", "attribute pads[0]")
    add("conv_dilation_int64_max.onnx", float_conv(dw, [1, 1], [1] * 4, 8, [1, INT64_MAX]),
        "WQ_ERR_SHAPE", "dilation 9223372036854775807")
    add("conv_dilation_2p62.onnx", float_conv(dw, [1, 1], [1] * 4, 8, [1 << 62, 1]),
        "WQ_ERR_SHAPE", "spatial axis 0")
    add("maxpool_stride_300.onnx", float_conv(dw, [1, 300], [1] * 4, 8, op="MaxPool"), "WQ_OK",
        "run")
    add("maxpool_stride_int64_max.onnx", float_conv(dw, [1, INT64_MAX], [1] * 4, 8, op="MaxPool"),
        "WQ_OK", "run same-as maxpool_stride_300.onnx")
    add("qlinearconv_dw_stride_300.onnx", qlinear_dw_conv(300), "WQ_OK", "run")
    add("qlinearconv_dw_stride_2p31.onnx", qlinear_dw_conv((1 << 31) - 1), "WQ_OK",
        "run same-as qlinearconv_dw_stride_300.onnx")
    add("qlinearconv_dw_stride_int64_max.onnx", qlinear_dw_conv(INT64_MAX), "WQ_OK",
        "run same-as qlinearconv_dw_stride_300.onnx")
    add("qdq_conv_dw_stride_300.onnx", qdq_dw_conv(300), "WQ_OK", "run")
    add("qdq_conv_dw_stride_2p31.onnx", qdq_dw_conv((1 << 31) - 1), "WQ_OK",
        "run same-as qdq_conv_dw_stride_300.onnx")
    add_integer_attribute_cases(add)
    # A declared input dim of 2^62: the element count must not wrap.
    add("input_dim_2p62.onnx",
        model(graph([node("Relu", ["X"], ["Y"], name="relu")],
                    [value_info("X", FLOAT, [4, 1 << 62])], [value_info("Y", FLOAT, None)])),
        "WQ_ERR_SHAPE", "element count overflows")
    # Found by fuzz_structured (kept as the fuzzer wrote it): a declared
    # uint8 input dim of 2^63-2 into a Concat whose other input has no type
    # reached the int8 layout pass, whose byte counts overflowed (UBSan).
    add("concat_uint8_dim_int64_max.onnx", bytes.fromhex(
        "0807120d6261636b656e64ff01746573743a95010a2d0a0676616c7565300a0676616c75653112066f757470"
        "75742206436f6e6361742a0b0a04617869731802a00102121474657374e56f6e6361745f33645f617869735f"
        "325a240a0676616c756530121a0a18080212140a0208020a0a08feffffffffffffff7f0a0208025a0a0a0676"
        "616c7565311200621c0a066f757470757412120a100803120c0a0208020a0208020a0208044202100d"), "WQ_OK")
    # Found by fuzz_load: a float conv bias holding a NaN made the bias fold
    # to int32 cast NaN to int (UBSan); the conv now stays float, saying why.
    add("qdq_conv_bias_nan.onnx",
        qdq_dw_conv(1, c=4, bias=[0.5, float("nan"), -0.25, 1.0]), "WQ_OK")
    add("initializer_dim_2p62.onnx",
        model(relu_model() + f_bytes(5, tensor("big", FLOAT, [1 << 62, 4], raw=b""))),
        "WQ_ERR_SHAPE", "element count overflows")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    cases = build()
    lines = []
    for name, data, status, substring in cases:
        with open(os.path.join(here, name), "wb") as f:
            f.write(data)
        lines.append(("%s %s %s" % (name, status, substring)).rstrip())
    with open(os.path.join(here, "expected.txt"), "w") as f:
        f.write("# file status [message substring] -- written by make_corpus.py\n")
        f.write("\n".join(lines) + "\n")
    print("wrote %d files to %s" % (len(cases), here), file=sys.stderr)


if __name__ == "__main__":
    main()
