"""What generated Triton code needs at run time (chapter 11, "Generating Triton").

    triton_helpers.py     small Triton functions copied into kernel files (nan rules, math)
    triton_codecache.py   write a kernel's source into the cache directory and import it
    triton_heuristics.py  block sizes and num_warps to try; the launcher that autotunes and runs
    autotune_cache.py     the best configuration of each kernel, on disk, per GPU model
"""
