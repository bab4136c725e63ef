"""Code generation backends for the scheduled loop IR (chapter 10): ``cpp`` for CPU tensors."""
