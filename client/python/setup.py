"""pip install ./client/python (add --no-build-isolation where there is no network: it uses the
system's setuptools and grpc_tools). Generates the gRPC stubs from the repository's proto/ first."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithStubs(build_py):
    def run(self):
        import build_protos

        build_protos.generate(HERE)
        super().run()


if __name__ == "__main__":
    import sys

    sys.path.insert(0, HERE)
    setup(
        name="gpusort",
        version="0.2.0",
        description="Client of the gpusort sorting and top-k service",
        packages=["gpusort", "gpusort.v1", "gpusort.dask"],
        package_data={"gpusort": ["py.typed"]},  # PEP 561: the package's own annotations are its types
        python_requires=">=3.9",
        install_requires=["grpcio", "numpy", "protobuf"],
        # gpusort.dask (Debian 12: python3-dask python3-distributed python3-pandas)
        extras_require={"dask": ["dask", "distributed", "pandas"]},
        cmdclass={"build_py": BuildWithStubs},
    )
