"""Generates the gRPC stubs of proto/gpusort/v1/sort.proto into gpusort/v1/ (git-ignored).

setup.py calls it when the package is built; the tests call it before importing the package from the
checkout. It needs grpc_tools (Debian: python3-grpc-tools). The stubs land inside the gpusort package,
so their own imports (`from gpusort.v1 import sort_pb2`) resolve to this package.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def proto_root():
    """The repository's proto/ directory (the checkout), or a copy shipped next to this file."""
    for candidate in (os.path.join(HERE, "..", "..", "proto"), os.path.join(HERE, "proto")):
        if os.path.isfile(os.path.join(candidate, "gpusort", "v1", "sort.proto")):
            return os.path.abspath(candidate)
    raise FileNotFoundError("gpusort/v1/sort.proto not found next to " + HERE)


def _modern_protoc():
    """The system's protoc when it writes messages as protobuf 4 and later load them (3.19 on), else None.
    Debian 12's grpc_tools carries an older protoc whose sort_pb2.py creates descriptors directly, which
    protobuf 4's C implementation refuses ("Descriptors cannot be created directly"): the package would
    then load only with Debian's own protobuf, not a newer one beside torch."""
    found = shutil.which("protoc")
    if not found:
        return None
    try:
        version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]
        major, minor = (int(part) for part in version.split(".")[:2])
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return None
    return found if (major, minor) >= (3, 19) else None


def generate(out_dir=HERE, force=False):
    """Writes gpusort/v1/sort_pb2.py and sort_pb2_grpc.py under out_dir (skips when they are newer than
    the proto). Where grpc_tools is missing, stubs that exist are used as they are: a Python that has
    grpcio and protobuf but not the generator (the GPU machine's, beside torch) runs the tests on stubs
    generated here and carried there."""
    root = proto_root()
    proto = os.path.join(root, "gpusort", "v1", "sort.proto")
    target = os.path.join(out_dir, "gpusort", "v1")
    stub = os.path.join(target, "sort_pb2.py")
    if not force and os.path.exists(stub) and os.path.getmtime(stub) >= os.path.getmtime(proto):
        return target
    try:
        from grpc_tools import protoc  # imported here: only generation needs it
    except ImportError:
        if not force and os.path.exists(stub):
            return target
        raise
    os.makedirs(target, exist_ok=True)
    args = ["grpc_tools.protoc", "-I" + root, "--grpc_python_out=" + out_dir, proto]
    system_protoc = _modern_protoc()
    if system_protoc:
        subprocess.run([system_protoc, "-I" + root, "--python_out=" + out_dir, proto], check=True)
    else:
        args.append("--python_out=" + out_dir)
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed on " + proto)
    with open(os.path.join(target, "__init__.py"), "w") as f:
        f.write('"""Generated gRPC stubs of gpusort/v1/sort.proto (build_protos.py)."""\n')
    return target


if __name__ == "__main__":
    print(generate(force="--force" in sys.argv))
