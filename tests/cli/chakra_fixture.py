"""Chakra execution traces written the way Chakra's own tools write them (its protolib's encodeMessage:
each message preceded by its length as a varint; GlobalMetadata version "0.0.4" first), with Python
classes protoc generates from proto/chakra_et.proto (Chakra's field numbers). Chakra's converters cannot
be installed here (they are not packaged for Debian), so the fixtures are produced from the schema: the
attribute types vary as the converters' do (comm_size as int64 or uint64, peers as int32, extra
attributes fmsim must ignore). Used by tests/cli/run_chakra_tests.py and benchmarks/chakra_replay.py."""
import importlib
import json
import os
import subprocess
import sys


def load_schema(src, out_dir):
    """Compiles proto/chakra_et.proto with protoc and imports the generated module."""
    subprocess.run(["protoc", f"--proto_path={os.path.join(src, 'proto')}", f"--python_out={out_dir}", "chakra_et.proto"], check=True)
    sys.path.insert(0, out_dir)
    return importlib.import_module("chakra_et_pb2")


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def decode_all(data):
    """The length-delimited messages of one .et file, as bytes."""
    out, pos = [], 0
    while pos < len(data):
        length, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        out.append(data[pos:pos + length])
        pos += length
    return out


def encode(message):
    data = message.SerializeToString()
    return varint(len(data)) + data


def attr(pb, name, **value):
    a = pb.AttributeProto(name=name)
    for key, v in value.items():
        if key.endswith("_list"):
            getattr(a, key).values.extend(v)
        else:
            setattr(a, key, v)
    return a


def layered_rank(pb, rank, world, layers, fwd_us, bwd_us, grad_bytes, p2p_bytes):
    """One rank of a data-parallel step as a PyTorch ET converted by Chakra might hold it: a metadata node,
    forward and backward compute (measured durations), a CPU op, a ring exchange with its neighbours, a
    gradient all-reduce over process group "0" and a barrier."""
    nodes = []
    nid = [100]  # converter ids need not start at 0

    def node(name, ntype, deps=(), ctrl=(), duration=0, attrs=()):
        n = pb.Node(id=nid[0], name=name, type=ntype, duration_micros=duration)
        n.data_deps.extend(deps)
        n.ctrl_deps.extend(ctrl)
        n.attr.extend(attrs)
        nid[0] += 1
        nodes.append(n)
        return n.id

    last = node("[pytorch|profiler|execution_trace|thread]", pb.METADATA_NODE,
                attrs=[attr(pb, "rf_id", int64_val=0), attr(pb, "op_schema", string_val="")])
    for layer in range(layers):
        last = node(f"aten::linear fwd {layer}", pb.COMP_NODE, deps=[last], duration=fwd_us,
                    attrs=[attr(pb, "is_cpu_op", bool_val=False), attr(pb, "num_ops", int64_val=10**9),
                           attr(pb, "tensor_size", uint64_val=2**24), attr(pb, "op_schema", string_val="aten::linear(...)")])
    last = node("cudaLaunchKernel", pb.COMP_NODE, deps=[last], duration=100, attrs=[attr(pb, "is_cpu_op", bool_val=True)])
    send = node("send to next", pb.COMM_SEND_NODE, deps=[last],
                attrs=[attr(pb, "comm_src", int32_val=rank), attr(pb, "comm_dst", int32_val=(rank + 1) % world),
                       attr(pb, "comm_size", uint64_val=p2p_bytes), attr(pb, "comm_tag", int32_val=7)])
    recv = node("recv from previous", pb.COMM_RECV_NODE, ctrl=[last],
                attrs=[attr(pb, "comm_src", int32_val=(rank - 1) % world), attr(pb, "comm_dst", int32_val=rank),
                       attr(pb, "comm_size", int64_val=p2p_bytes), attr(pb, "comm_tag", int32_val=7)])
    last = recv
    for layer in reversed(range(layers)):
        last = node(f"aten::linear bwd {layer}", pb.COMP_NODE, deps=[last], duration=bwd_us,
                    attrs=[attr(pb, "is_cpu_op", bool_val=False), attr(pb, "num_ops", int64_val=2 * 10**9)])
    ar = node("nccl:all_reduce", pb.COMM_COLL_NODE, deps=[last, send],
              attrs=[attr(pb, "is_cpu_op", bool_val=False), attr(pb, "comm_type", int64_val=pb.ALL_REDUCE),
                     attr(pb, "comm_size", uint64_val=grad_bytes), attr(pb, "pg_name", string_val="0"),
                     attr(pb, "involved_dim", bool_list=[True])])
    node("barrier", pb.COMM_COLL_NODE, deps=[ar],
         attrs=[attr(pb, "comm_type", int64_val=pb.BARRIER), attr(pb, "comm_size", int64_val=0), attr(pb, "pg_name", string_val="0")])
    return nodes


def write_trace(pb, prefix, world, **shape):
    """Writes PREFIX.RANK.et for every rank and PREFIX.comm_groups.json (process group "0": all ranks)."""
    for rank in range(world):
        with open(f"{prefix}.{rank}.et", "wb") as f:
            f.write(encode(pb.GlobalMetadata(version="0.0.4")))
            for n in layered_rank(pb, rank, world, **shape):
                f.write(encode(n))
    with open(f"{prefix}.comm_groups.json", "w") as f:
        json.dump({"0": list(range(world))}, f)
