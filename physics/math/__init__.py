"""Rotations (and their compiled scalar kernels), dual numbers, transforms, relative motion, small dense linear algebra."""
