"""Builds the C extension tinydynamo._C._eval_frame (the PEP 523 frame hook, chapter 2)."""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tinydynamo._C._eval_frame",
            sources=["src/tinydynamo/_C/eval_frame.c"],
            extra_compile_args=["-O2", "-Wall"],
        )
    ]
)
