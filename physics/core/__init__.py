"""What every layer stands on: the compile policy (numba), threads, profiling, safe file reading and writing, validation of values, the choice-valued settings and the Settings."""
